"""Build settings of the statics gate: the check's options, settable on the command line for the pattern
mode (`--@atlas//lint:lifecycle_files=^app/life/`) and by atlas_statics_test's attributes, which set them
on the targets it gates through a transition (merged over these values: an empty attribute keeps them)."""

AtlasSettingInfo = provider(doc = "The value of one of the gate's build settings.", fields = ["value"])

def _setting_impl(ctx):
    return [AtlasSettingInfo(value = ctx.build_setting_value)]

atlas_string_setting = rule(
    implementation = _setting_impl,
    build_setting = config.string(flag = True),
    doc = "A string the gate reads (a check option; empty: the configuration file's value).",
)

atlas_string_list_setting = rule(
    implementation = _setting_impl,
    build_setting = config.string_list(flag = True),
    doc = "A list of strings the gate reads (CUDA architectures of the device-side parses).",
)

# The settings a gate rule may set on what it gates, by attribute name. Spelled through Label() so that
# they name Atlas's settings from a consumer's workspace too.
GATE_SETTINGS = {
    "lifecycle_files": str(Label("//lint:lifecycle_files")),
    "cuda_host_files": str(Label("//lint:cuda_host_files")),
    "cuda_archs": str(Label("//lint:cuda_archs")),
    "cuda_stand_ins": str(Label("//lint:cuda_stand_ins")),
}

def _gate_transition_impl(settings, attr):
    out = {}
    for name, setting in GATE_SETTINGS.items():
        value = getattr(attr, name, None)
        out[setting] = value if value else settings[setting]
    return out

gate_options_transition = transition(
    implementation = _gate_transition_impl,
    inputs = GATE_SETTINGS.values(),
    outputs = GATE_SETTINGS.values(),
)

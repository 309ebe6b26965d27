"""npm_lock_packages: the packages a package-lock.json pins, as node_modules.

For test clients written against npm packages (tests/serve/openai_client):
every "node_modules/NAME" entry of the lockfile is downloaded by Bazel from
its "resolved" URL (or the npm registry's tarball URL for its version),
checked against its "integrity" (sha512), and extracted under node_modules/.
No npm is needed and no install script runs, so only packages that need none
(the pinned `openai` has no dependencies at all) belong in such a lockfile.

A failed fetch does not fail the build: the repository then holds error.txt
and the test that uses it fails with that message (it never skips).
"""

_REGISTRY = "https://registry.npmjs.org/"

def _impl(ctx):
    lock = json.decode(ctx.read(ctx.attr.lockfile))
    packages = lock.get("packages", {})
    errors = []
    for key, entry in packages.items():
        if not key.startswith("node_modules/"):
            continue
        name = key[len("node_modules/"):]
        version = entry.get("version", "")
        url = entry.get("resolved", "")
        if not url:
            url = "%s%s/-/%s-%s.tgz" % (_REGISTRY, name, name.split("/")[-1], version)
        result = ctx.download_and_extract(
            url = url,
            output = key,
            type = "tar.gz",
            stripPrefix = "package",
            integrity = entry.get("integrity", ""),
            allow_fail = True,
        )
        if not result.success:
            errors.append("%s@%s from %s" % (name, version, url))
    if errors:
        ctx.file("error.txt", "npm_lock_packages %s: could not fetch %s (fetch again with `tools/bazel sync --only=%s`)\n" % (ctx.name, ", ".join(errors), ctx.name))
        ctx.file("BUILD", 'filegroup(name = "node_modules", srcs = ["error.txt"], visibility = ["//visibility:public"])\n')
        return
    ctx.file("BUILD", """
filegroup(
    name = "node_modules",
    srcs = glob(["node_modules/**"]),
    visibility = ["//visibility:public"],
)
""")

npm_lock_packages = repository_rule(
    implementation = _impl,
    attrs = {"lockfile": attr.label(mandatory = True, allow_single_file = True)},
)

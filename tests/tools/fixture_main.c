// A program for the staging tests: linked statically (fixture_static) it
// needs only libc; linked dynamically (fixture_dynamic) it also needs the
// Bazel-built fixture_lib's shared library, as a cc_test without linkstatic
// needs its deps'.
int atlas_fixture_value(void);

int main(void) { return atlas_fixture_value() == 7 ? 0 : 1; }

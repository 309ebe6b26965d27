// A C++ legacy cache: its straggler's baseline key holds blanks ('(anonymous namespace)'), quoted in
// statics.baseline.
namespace legacy {
namespace {
int g_cache_hits;
}  // namespace

int CacheHit() { return ++g_cache_hits; }
}  // namespace legacy

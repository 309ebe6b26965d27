#include "atlas/runtime/base/version.h"

const char *atlas_version(void) { return ATLAS_VERSION_STRING; }

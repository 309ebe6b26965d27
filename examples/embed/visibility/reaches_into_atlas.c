// Would use Atlas's private backend vtable; the build must refuse the
// dependency.
#include "atlas/runtime/device/backend_impl.h"

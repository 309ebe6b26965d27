// The filters, tests, global functions and methods chat templates may use.
// The parser refuses a filter or test outside these lists by name; the
// renderer dispatches on them.
#ifndef ATLAS_RUNTIME_CHAT_JINJA_BUILTINS_H_
#define ATLAS_RUNTIME_CHAT_JINJA_BUILTINS_H_

#include <stdbool.h>

// range() and slices compute start + i * step in 128 bits, where no 64-bit
// operand can overflow; __extension__ keeps an embedder's -Wpedantic quiet.
__extension__ typedef __int128 atlas_jinja_i128;

bool atlas_jinja_filter_known(const char *name);
bool atlas_jinja_test_known(const char *name);

#endif  // ATLAS_RUNTIME_CHAT_JINJA_BUILTINS_H_

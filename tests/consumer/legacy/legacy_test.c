#include "legacy/legacy.h"

int main(void) {
  unsigned first = legacy_next_request_id();
  return legacy_next_request_id() == first + 1 ? 0 : 1;
}

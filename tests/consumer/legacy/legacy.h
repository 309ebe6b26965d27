// A legacy request counter, being adopted into the Atlas statics gate.
#ifndef LEGACY_LEGACY_H_
#define LEGACY_LEGACY_H_

// Returns the next request id and warns (once per process) when ids wrap.
unsigned legacy_next_request_id(void);

#endif  // LEGACY_LEGACY_H_

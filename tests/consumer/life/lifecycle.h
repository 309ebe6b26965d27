#ifndef LIFE_LIFECYCLE_H_
#define LIFE_LIFECYCLE_H_
int life_install(void);
int life_should_stop(void);
#endif  // LIFE_LIFECYCLE_H_

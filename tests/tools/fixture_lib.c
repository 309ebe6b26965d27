// The one dependency of the staging fixtures (see fixture_main.c).
int atlas_fixture_value(void);

int atlas_fixture_value(void) { return 7; }

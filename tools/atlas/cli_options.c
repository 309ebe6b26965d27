#define _GNU_SOURCE  // pread, O_NONBLOCK, strdup, clock_gettime
#include "atlas/tools/atlas/cli_options.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/base/escape.h"

// getopt_long returns an option's table index plus ID_BASE, so no index can
// be mistaken for a short option character or for 0 (an unknown option).
enum {
  MAX_OPTIONS = 64,
  ID_BASE = 256,
  HELP_ID = ID_BASE + MAX_OPTIONS,
  VERSION_ID,
};

void atlas_cli_print_error(const char *program, const char *message,
                           const char *tail) {
  const unsigned flags = ATLAS_ESCAPE_KEEP_NEWLINE;
  size_t n = strlen(message);
  if (n <= ATLAS_CLI_MESSAGE_SHOWN &&
      atlas_escape_is_clean(message, n, flags)) {
    fprintf(stderr, "%s: %s%s\n", program, message, tail);
    return;
  }
  size_t size = ATLAS_ESCAPE_BYTES(ATLAS_CLI_MESSAGE_SHOWN);
  char *shown = malloc(size);
  if (shown == NULL) {
    fprintf(stderr,
            "%s: (a message of %zu bytes that could not be escaped)%s\n",
            program, n, tail);
    return;
  }
  atlas_escape(message, n, flags, ATLAS_CLI_MESSAGE_SHOWN, shown, size);
  fprintf(stderr, "%s: %s%s\n", program, shown, tail);
  free(shown);
}

int atlas_cli_usage_error(const char *program, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *message = NULL;
  int n = vasprintf(&message, fmt, ap);
  va_end(ap);
  char tail[256];
  snprintf(tail, sizeof(tail), "; see `%s --help`", program);
  atlas_cli_print_error(program, n >= 0 ? message : fmt, tail);
  if (n >= 0) free(message);
  return ATLAS_CLI_EXIT_USAGE;
}

enum { HELP_COLUMN = 28, HELP_WIDTH = 79 };

// Prints `text` from column HELP_COLUMN, wrapped at words before HELP_WIDTH;
// continuation lines start at HELP_COLUMN too. `at` is the current column.
static void put_wrapped(FILE *out, const char *text, int at) {
  const char *p = text;
  while (*p) {
    size_t word = strcspn(p, " ");
    if (at > HELP_COLUMN && at + 1 + (int)word > HELP_WIDTH) {
      fprintf(out, "\n%*s", HELP_COLUMN, "");
      at = HELP_COLUMN;
    } else if (at > HELP_COLUMN) {
      fputc(' ', out);
      ++at;
    }
    fwrite(p, 1, word, out);
    at += (int)word;
    p += word;
    while (*p == ' ') ++p;
  }
  fputc('\n', out);
}

static void put_option(FILE *out, const char *head, const char *help,
                       const char *tail) {
  char line[1024];
  snprintf(line, sizeof(line), "%s%s", help, tail);
  int at = fprintf(out, "  %s", head);
  if (at >= HELP_COLUMN) {
    fprintf(out, "\n");
    at = 0;
  }
  fprintf(out, "%*s", HELP_COLUMN - at, "");
  // Start just past the column so the first word never wraps.
  int first = (int)strcspn(line, " ");
  fwrite(line, 1, (size_t)first, out);
  if (line[first] != '\0') {
    put_wrapped(out, line + first + 1, HELP_COLUMN + first);
  } else {
    fputc('\n', out);
  }
}

void atlas_cli_print_help(const atlas_cli_command *c, FILE *out) {
  fprintf(out, "usage: %s %s\n\n%s\n\noptions:\n", c->program, c->synopsis,
          c->summary);
  for (size_t i = 0; i < c->option_count; ++i) {
    const atlas_cli_option *o = &c->options[i];
    char head[96], tail[160] = "";
    snprintf(head, sizeof(head), "--%s%s%s", o->name, o->metavar ? " " : "",
             o->metavar ? o->metavar : "");
    if (o->required) {
      snprintf(tail, sizeof(tail), " (required)");
    } else if (o->fallback != NULL) {
      snprintf(tail, sizeof(tail), " [default: %s]", o->fallback);
    }
    put_option(out, head, o->help, tail);
  }
  put_option(out, "-h, --help", "print this help and exit", "");
  if (c->version != NULL) {
    put_option(out, "--version", "print the version and exit", "");
  }
  fputs(
      "\nBoth --opt value and --opt=value work.\n"
      "Exit status: 0 done, 1 failed, 2 usage error.\n",
      out);
}

// getopt_long calls an abbreviation of several options unknown (optopt 0):
// say which options it could be.
static void report_unknown(const atlas_cli_command *c, const char *arg) {
  size_t len = strcspn(arg, "=");
  if (len > 2 && arg[0] == '-' && arg[1] == '-') {
    char matches[512] = "";
    size_t count = 0, used = 0;
    for (size_t i = 0; i < c->option_count; ++i) {
      const char *name = c->options[i].name;
      if (strlen(name) >= len - 2 && strncmp(name, arg + 2, len - 2) == 0) {
        int n = snprintf(matches + used, sizeof(matches) - used, "%s--%s",
                         count ? ", " : "", name);
        if (n > 0 && (size_t)n < sizeof(matches) - used) used += (size_t)n;
        ++count;
      }
    }
    if (count > 1) {
      atlas_cli_usage_error(c->program, "ambiguous option '%.*s' (could be %s)",
                            (int)len, arg, matches);
      return;
    }
  }
  atlas_cli_usage_error(c->program, "unknown option '%s'", arg);
}

atlas_cli_parse_result atlas_cli_parse(const atlas_cli_command *c, int argc,
                                       char **argv, atlas_cli_set_fn set,
                                       void *opts, int *out_next) {
  *out_next = argc;
  struct option longs[MAX_OPTIONS + 3];
  bool seen[MAX_OPTIONS] = {false};
  const size_t n = c->option_count;
  if (n > MAX_OPTIONS) {  // a table this long is a bug in the tool
    atlas_cli_usage_error(c->program,
                          "has %zu options; at most %d are "
                          "supported",
                          n, (int)MAX_OPTIONS);
    return ATLAS_CLI_USAGE_ERROR;
  }
  for (size_t i = 0; i < n; ++i) {
    longs[i] =
        (struct option){c->options[i].name,
                        c->options[i].metavar ? required_argument : no_argument,
                        NULL, ID_BASE + (int)i};
  }
  longs[n] = (struct option){"help", no_argument, NULL, HELP_ID};
  size_t end = n + 1;
  if (c->version != NULL) {
    longs[end++] = (struct option){"version", no_argument, NULL, VERSION_ID};
  }
  longs[end] = (struct option){NULL, 0, NULL, 0};
  // getopt's state is libc's: 0 makes glibc start afresh (a second parse in
  // one process, e.g. a command after the top-level options).
  optind = 0;
  opterr = 0;
  for (;;) {
    int id = getopt_long(argc, argv, ":h", longs, NULL);
    if (id == -1) break;
    const char *arg = argv[optind - 1];
    if (id == 'h' || id == HELP_ID) {
      atlas_cli_print_help(c, stdout);
      return ATLAS_CLI_HELP;
    }
    if (id == VERSION_ID) {
      printf("%s %s\n", c->program, c->version);
      return ATLAS_CLI_HELP;
    }
    if (id == ':') {
      atlas_cli_usage_error(c->program, "%s needs a value", arg);
      return ATLAS_CLI_USAGE_ERROR;
    }
    if (id == '?') {
      if (optopt == HELP_ID || optopt == VERSION_ID) {
        atlas_cli_usage_error(c->program, "--%s takes no value",
                              optopt == HELP_ID ? "help" : "version");
      } else if (optopt >= ID_BASE && (size_t)(optopt - ID_BASE) < n) {
        atlas_cli_usage_error(c->program, "--%s takes no value",
                              c->options[optopt - ID_BASE].name);
      } else if (optopt > 0 && optopt < ID_BASE) {
        atlas_cli_usage_error(c->program, "unknown option '-%c'", optopt);
      } else {
        report_unknown(c, arg);
      }
      return ATLAS_CLI_USAGE_ERROR;
    }
    size_t index = (size_t)(id - ID_BASE);
    seen[index] = true;
    atlas_status s =
        set(opts, index, c->options[index].metavar ? optarg : NULL);
    if (s != ATLAS_OK) {
      atlas_cli_usage_error(c->program, "%s", atlas_status_message(s));
      atlas_status_free(s);
      return ATLAS_CLI_USAGE_ERROR;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (c->options[i].required && !seen[i]) {
      atlas_cli_usage_error(c->program, "--%s %s is required",
                            c->options[i].name, c->options[i].metavar);
      return ATLAS_CLI_USAGE_ERROR;
    }
  }
  if ((size_t)(argc - optind) > c->max_positionals) {
    atlas_cli_usage_error(c->program, "unexpected argument '%s'",
                          argv[optind + (int)c->max_positionals]);
    return ATLAS_CLI_USAGE_ERROR;
  }
  *out_next = optind;
  return ATLAS_CLI_PARSED;
}

// strto* skip leading white space, which the user never meant as part of
// a number (and " -1" would slip past a check of the first character).
static bool starts_with_space(const char *value) {
  return value[0] != '\0' && strchr(" \t\n\v\f\r", value[0]) != NULL;
}

atlas_status atlas_cli_parse_long(const char *option, const char *value,
                                  long min, long max, long *out_value) {
  char *end = NULL;
  errno = 0;
  long v = strtol(value, &end, 10);
  if (errno != 0 || end == value || *end != '\0' || v < min || v > max ||
      starts_with_space(value)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s wants an integer from %ld to %ld, not '%s'",
                             option, min, max, value);
  }
  *out_value = v;
  return ATLAS_OK;
}

atlas_status atlas_cli_parse_u64(const char *option, const char *value,
                                 unsigned long long max,
                                 unsigned long long *out_value) {
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(value, &end, 10);
  if (errno != 0 || end == value || *end != '\0' || value[0] == '-' ||
      v > max || starts_with_space(value)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s wants an integer from 0 to %llu, not '%s'",
                             option, max, value);
  }
  *out_value = v;
  return ATLAS_OK;
}

atlas_status atlas_cli_parse_double(const char *option, const char *value,
                                    double min, double *out_value) {
  char *end = NULL;
  errno = 0;
  double v = strtod(value, &end);
  if (errno == ERANGE && isfinite(v))
    errno = 0;  // underflow: a tiny number, not an error
  // "nan", "inf" and friends are refused: no flag means them.
  if (errno != 0 || end == value || *end != '\0' || !isfinite(v) || v < min ||
      starts_with_space(value)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s wants a number >= %g, not '%s'", option, min,
                             value);
  }
  *out_value = v;
  return ATLAS_OK;
}

atlas_status atlas_cli_parse_interval(const char *option, const char *value,
                                      double lo, bool lo_open, double hi,
                                      double *out_value) {
  char *end = NULL;
  errno = 0;
  double v = strtod(value, &end);
  if (errno == ERANGE && isfinite(v))
    errno = 0;  // underflow: a tiny number, not an error
  bool ok = errno == 0 && end != value && *end == '\0' && isfinite(v) &&
            !starts_with_space(value) && (lo_open ? v > lo : v >= lo) &&
            v <= hi;
  if (!ok) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s wants a number in %s%g, %g], not '%s'", option,
                             lo_open ? "(" : "[", lo, hi, value);
  }
  *out_value = v;
  return ATLAS_OK;
}

atlas_status atlas_cli_resolve_path(const char *option, const char *value,
                                    char *out_path) {
  const char *base = getenv("BUILD_WORKING_DIRECTORY");
  int n;
  if (value[0] == '\0') {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s wants a path, not an empty string", option);
  }
  if (value[0] == '/' || base == NULL || base[0] == '\0') {
    n = snprintf(out_path, ATLAS_CLI_PATH_MAX, "%s", value);
  } else {
    n = snprintf(out_path, ATLAS_CLI_PATH_MAX, "%s/%s", base, value);
  }
  if (n < 0 || n >= ATLAS_CLI_PATH_MAX) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: the path is longer than %d bytes", option,
                             ATLAS_CLI_PATH_MAX - 1);
  }
  return ATLAS_OK;
}

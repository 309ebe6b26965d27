#define _POSIX_C_SOURCE 200809L  // strndup
#include "atlas/runtime/chat/jinja_lex.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "atlas/runtime/chat/jinja_error.h"
#include "atlas/runtime/chat/jinja_text.h"

typedef struct lexer {
  const char *s;
  size_t n;
  size_t pos;
  jinja_toks *out;
  size_t cap;
  size_t lc_at;  // line/column are counted on from the last position asked
  int lc_line;
  int lc_col;
} lexer;

// What a character is to a name. Jinja's lexer takes a name as a run of
// Python's \w (letters and numbers of any script, '_') and of the marks and
// connectors identifiers hold (jinja2/_identifier.py), then requires
// str.isidentifier(): XID_Start first, XID_Continue after. By utf8proc's
// categories: a letter, a letter number or '_' may start one (NAME_START);
// marks, decimal digits, connectors, U+00B7, U+0387, U+1369-U+1371 and
// U+19DA only follow (NAME_CONTINUE); other numbers are in the run but in no
// identifier (NAME_RUN_ONLY: '½' and 'x½' are refused, as Jinja refuses them).
typedef enum { NAME_NONE, NAME_START, NAME_CONTINUE, NAME_RUN_ONLY } name_class;

static name_class classify(utf8proc_int32_t cp) {
  if (cp < 0x80) {
    return isalpha(cp) || cp == '_' ? NAME_START
           : isdigit(cp)            ? NAME_CONTINUE
                                    : NAME_NONE;
  }
  switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_NL:
      return NAME_START;
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_PC:
      return NAME_CONTINUE;
    case UTF8PROC_CATEGORY_NO:
      return (cp >= 0x1369 && cp <= 0x1371) || cp == 0x19DA ? NAME_CONTINUE
                                                            : NAME_RUN_ONLY;
    default:
      return cp == 0xB7 || cp == 0x387 ? NAME_CONTINUE : NAME_NONE;
  }
}

// The bytes of the character at p and its class (0 and NAME_NONE: not UTF-8).
static size_t name_char(const char *p, size_t left, name_class *cls) {
  utf8proc_int32_t cp = (unsigned char)p[0];
  utf8proc_ssize_t k = 1;
  if (cp >= 0x80)
    k = utf8proc_iterate((const utf8proc_uint8_t *)p, (utf8proc_ssize_t)left,
                         &cp);
  *cls = k > 0 ? classify(cp) : NAME_NONE;
  return k > 0 ? (size_t)k : 0;
}

static void line_col(lexer *lx, size_t at, int *line, int *col) {
  int l = 1, c = 1;
  size_t i = 0;
  if (at >= lx->lc_at && lx->lc_line > 0) {
    i = lx->lc_at;
    l = lx->lc_line;
    c = lx->lc_col;
  }
  for (; i < at && i < lx->n; ++i) {
    if (lx->s[i] == '\n') {
      ++l;
      c = 1;
    } else {
      ++c;
    }
  }
  *line = l;
  *col = c;
  lx->lc_at = i;
  lx->lc_line = l;
  lx->lc_col = c;
}

static atlas_status err_at(lexer *lx, size_t at, const char *what) {
  int line, col;
  line_col(lx, at, &line, &col);
  return atlas_jinja_error_at(line, col, "%s", what);
}

static jinja_tok *push(lexer *lx, jinja_tok_kind kind, size_t at) {
  if (lx->out->n == lx->cap) {
    size_t cap = lx->cap ? lx->cap * 2 : 256;
    jinja_tok *v = realloc(lx->out->v, cap * sizeof(jinja_tok));
    if (!v) return NULL;
    lx->out->v = v;
    lx->cap = cap;
  }
  jinja_tok *t = &lx->out->v[lx->out->n++];
  memset(t, 0, sizeof(*t));
  t->kind = kind;
  line_col(lx, at, &t->line, &t->col);
  return t;
}

static atlas_status oom(void) { return atlas_jinja_oom("lexing"); }

// A string literal, with the escapes Python's unicode-escape codec resolves
// (Jinja2 decodes literals with it); unknown escapes keep their backslash.
static atlas_status lex_string(lexer *lx, size_t start) {
  const char q = lx->s[start];
  jinja_buf b = {0};
  size_t i = start + 1;
  for (;;) {
    if (i >= lx->n) {
      atlas_jinja_buf_free(&b);
      return err_at(lx, start, "unterminated string literal");
    }
    char c = lx->s[i];
    if (c == q) break;
    if (c != '\\' || i + 1 >= lx->n) {
      atlas_jinja_buf_putc(&b, c);
      ++i;
      continue;
    }
    char e = lx->s[i + 1];
    i += 2;
    switch (e) {
      case 'n':
        atlas_jinja_buf_putc(&b, '\n');
        break;
      case 't':
        atlas_jinja_buf_putc(&b, '\t');
        break;
      case 'r':
        atlas_jinja_buf_putc(&b, '\r');
        break;
      case '\\':
        atlas_jinja_buf_putc(&b, '\\');
        break;
      case '\'':
        atlas_jinja_buf_putc(&b, '\'');
        break;
      case '"':
        atlas_jinja_buf_putc(&b, '"');
        break;
      case 'a':
        atlas_jinja_buf_putc(&b, '\a');
        break;
      case 'b':
        atlas_jinja_buf_putc(&b, '\b');
        break;
      case 'f':
        atlas_jinja_buf_putc(&b, '\f');
        break;
      case 'v':
        atlas_jinja_buf_putc(&b, '\v');
        break;
      case '\n':
        break;  // line continuation
      case 'x':
      case 'u':
      case 'U': {
        const int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        uint32_t cp = 0;
        for (int k = 0; k < digits; ++k) {
          if (i >= lx->n || !isxdigit((unsigned char)lx->s[i])) {
            atlas_jinja_buf_free(&b);
            return err_at(lx, i,
                          "truncated \\x/\\u/\\U escape in a string literal");
          }
          char h = lx->s[i++];
          cp = cp * 16 +
               (uint32_t)(isdigit((unsigned char)h)
                              ? h - '0'
                              : (tolower((unsigned char)h) - 'a' + 10));
        }
        // Python's unicode-escape codec refuses a code point past U+10FFFF
        // ("illegal Unicode character"); a surrogate decodes to a lone one
        // that transformers' prompt could not encode as UTF-8.
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
          atlas_jinja_buf_free(&b);
          return err_at(lx, i - (size_t)digits - 2,
                        cp > 0x10FFFF
                            ? "illegal Unicode character in a \\U escape "
                              "(past U+10FFFF)"
                            : "a \\u or \\U escape names a surrogate "
                              "(U+D800..U+DFFF), which is not a character");
        }
        atlas_jinja_utf8_put(&b, cp);
        break;
      }
      default:
        if (e >= '0' && e <= '7') {
          uint32_t cp = (uint32_t)(e - '0');
          for (int k = 0;
               k < 2 && i < lx->n && lx->s[i] >= '0' && lx->s[i] <= '7'; ++k) {
            cp = cp * 8 + (uint32_t)(lx->s[i++] - '0');
          }
          atlas_jinja_utf8_put(&b, cp);
        } else if (e == 'N') {
          atlas_jinja_buf_free(&b);
          return err_at(
              lx, i - 2,
              "\\N{...} escapes in string literals are not supported");
        } else {
          atlas_jinja_buf_putc(&b, '\\');
          atlas_jinja_buf_putc(&b, e);
        }
    }
  }
  if (b.oom) {
    atlas_status st = atlas_jinja_buf_status(&b, "lexing");
    atlas_jinja_buf_free(&b);
    return st;
  }
  jinja_tok *t = push(lx, JT_STRING, start);
  if (!t) {
    atlas_jinja_buf_free(&b);
    return oom();
  }
  t->value = json_stringn_nocheck(b.data ? b.data : "", b.len);
  atlas_jinja_buf_free(&b);
  lx->pos = i + 1;
  return t->value ? ATLAS_OK : oom();
}

// Appends c to a number literal's digits, or marks it too long.
static void take(char *digits, size_t size, size_t *nd, bool *too_long,
                 char c) {
  if (*nd < size - 1) {
    digits[(*nd)++] = c;
  } else {
    *too_long = true;
  }
}

static atlas_status lex_number(lexer *lx, size_t start) {
  size_t i = start;
  char digits[128];  // the message below names its size
  size_t nd = 0;
  bool is_float = false, too_long = false;
  // The literal without its underscores; one longer than the buffer is
  // refused below (cutting it would change its value).
  while (i < lx->n && (isdigit((unsigned char)lx->s[i]) || lx->s[i] == '_')) {
    if (lx->s[i] != '_') take(digits, sizeof digits, &nd, &too_long, lx->s[i]);
    ++i;
  }
  if (i + 1 < lx->n && lx->s[i] == '.' &&
      isdigit((unsigned char)lx->s[i + 1])) {
    is_float = true;
    take(digits, sizeof digits, &nd, &too_long, '.');
    ++i;
    while (i < lx->n && (isdigit((unsigned char)lx->s[i]) || lx->s[i] == '_')) {
      if (lx->s[i] != '_')
        take(digits, sizeof digits, &nd, &too_long, lx->s[i]);
      ++i;
    }
  }
  if (i < lx->n && (lx->s[i] == 'e' || lx->s[i] == 'E')) {
    size_t j = i + 1;
    if (j < lx->n && (lx->s[j] == '+' || lx->s[j] == '-')) ++j;
    if (j < lx->n && isdigit((unsigned char)lx->s[j])) {
      is_float = true;
      while (i < j) take(digits, sizeof digits, &nd, &too_long, lx->s[i++]);
      while (i < lx->n && isdigit((unsigned char)lx->s[i]))
        take(digits, sizeof digits, &nd, &too_long, lx->s[i++]);
    }
  }
  if (too_long) {
    return err_at(
        lx, start,
        "a number literal longer than 127 characters is not supported");
  }
  digits[nd] = '\0';
  jinja_tok *t = push(lx, is_float ? JT_FLOAT : JT_INT, start);
  if (!t) return oom();
  if (is_float) {
    double f = strtod(digits, NULL);
    if (!isfinite(f))
      return err_at(
          lx, start,
          "float literal is not finite (Atlas's numbers cannot hold infinity)");
    t->value = json_real(f);
  } else {
    errno = 0;
    long long v = strtoll(digits, NULL, 10);
    if (errno == ERANGE)
      return err_at(lx, start, "integer literal does not fit in 64 bits");
    t->value = json_integer(v);
  }
  lx->pos = i;
  return t->value ? ATLAS_OK : oom();
}

// Tokens inside a {{ }} or {% %} tag up to its end delimiter. Sets
// *strip_after when the tag ends with '-', *keep_newline when it ends with '+'.
static atlas_status lex_tag(lexer *lx, bool is_block, bool *strip_after,
                            bool *keep_newline, size_t tag_start) {
  static const char *const kOps[] = {
      "//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<",
      ">",  "=",  "(",  ")",  "[",  "]",  "{", "}", ",", ".", ":", "|"};
  const char end0 = is_block ? '%' : '}';
  *strip_after = false;
  *keep_newline = false;
  int depth = 0;  // brackets: '}' inside {{ {'a': 1} }} is not the end
  for (;;) {
    while (lx->pos < lx->n && isspace((unsigned char)lx->s[lx->pos])) lx->pos++;
    if (lx->pos >= lx->n) {
      return err_at(lx, tag_start,
                    is_block ? "unterminated block tag ({% without %})"
                             : "unterminated expression ({{ without }})");
    }
    const char *p = lx->s + lx->pos;
    const size_t left = lx->n - lx->pos;
    if (depth == 0) {
      size_t k = 0;
      if ((p[0] == '-' || p[0] == '+') && left >= 3 && p[1] == end0 &&
          p[2] == '}')
        k = 1;
      if (k == 0 && left >= 2 && p[0] == end0 && p[1] == '}') k = 2;
      if (k != 0) {
        if (k == 1) {
          *strip_after = p[0] == '-';
          *keep_newline = p[0] == '+';
        }
        jinja_tok *t = push(lx, is_block ? JT_BLOCK_END : JT_VAR_END, lx->pos);
        if (!t) return oom();
        lx->pos += k == 1 ? 3 : 2;
        return ATLAS_OK;
      }
    }
    const unsigned char c = (unsigned char)p[0];
    name_class cls;
    size_t k = name_char(p, left, &cls);
    // An ASCII digit starts a number, not a name.
    if (cls != NAME_NONE && !(c < 0x80 && isdigit(c))) {
      size_t i = 0, shown = 0;  // shown: whole characters within 15 bytes
      do {
        if (i == 0 ? cls != NAME_START : cls == NAME_RUN_ONLY) {
          return err_at(lx, lx->pos + i, "invalid character in identifier");
        }
        i += k;
        if (i <= 15) shown = i;
        k = i < left ? name_char(p + i, left - i, &cls) : 0;
      } while (k > 0 && cls != NAME_NONE);
      jinja_tok *t = push(lx, JT_NAME, lx->pos);
      if (!t) return oom();
      t->name = strndup(p, i);
      if (!t->name) return oom();
      snprintf(t->text, sizeof t->text, "%.*s", (int)shown, p);
      lx->pos += i;
      continue;
    }
    if (isdigit(c)) {
      ATLAS_RETURN_IF_ERROR(lex_number(lx, lx->pos));
      continue;
    }
    if (c == '\'' || c == '"') {
      ATLAS_RETURN_IF_ERROR(lex_string(lx, lx->pos));
      continue;
    }
    bool matched = false;
    for (size_t o = 0; o < sizeof kOps / sizeof kOps[0]; ++o) {
      const size_t ol = strlen(kOps[o]);
      if (ol <= left && memcmp(p, kOps[o], ol) == 0) {
        jinja_tok *t = push(lx, JT_OP, lx->pos);
        if (!t) return oom();
        memcpy(t->text, kOps[o], ol);
        if (strchr("([{", p[0]) && ol == 1) depth++;
        if (strchr(")]}", p[0]) && ol == 1 && depth > 0) depth--;
        lx->pos += ol;
        matched = true;
        break;
      }
    }
    if (!matched) {
      char what[64];
      // The whole UTF-8 character, where it is one (k: name_char's bytes).
      snprintf(what, sizeof what, "unexpected character '%.*s' inside a tag",
               k > 0 ? (int)k : 1, p);
      return err_at(lx, lx->pos, what);
    }
  }
}

static atlas_status push_text(lexer *lx, size_t from, size_t to, size_t at) {
  if (to <= from) return ATLAS_OK;
  jinja_tok *t = push(lx, JT_TEXT, at);
  if (!t) return oom();
  t->value = json_stringn_nocheck(lx->s + from, to - from);
  return t->value ? ATLAS_OK : oom();
}

static atlas_status lex_all(lexer *lx) {
  bool line_starting = true;
  while (lx->pos < lx->n) {
    // The next tag opening.
    size_t t = lx->pos;
    char kind = 0;
    for (; t + 1 < lx->n; ++t) {
      if (lx->s[t] == '{' &&
          (lx->s[t + 1] == '{' || lx->s[t + 1] == '%' || lx->s[t + 1] == '#')) {
        kind = lx->s[t + 1];
        break;
      }
    }
    if (!kind) {
      ATLAS_RETURN_IF_ERROR(push_text(lx, lx->pos, lx->n, lx->pos));
      lx->pos = lx->n;
      break;
    }
    size_t text_end = t;
    size_t p = t + 2;
    char sign = 0;
    if (p < lx->n && (lx->s[p] == '-' || (kind != '{' && lx->s[p] == '+')))
      sign = lx->s[p++];
    if (sign == '-') {
      while (text_end > lx->pos && isspace((unsigned char)lx->s[text_end - 1]))
        --text_end;
    } else if (kind != '{' && sign != '+') {
      // lstrip_blocks: only whitespace between the line start and the tag.
      size_t l = text_end;
      while (l > lx->pos && lx->s[l - 1] != '\n') --l;
      const bool at_line_start = l > lx->pos || line_starting;
      bool blank = l < text_end;
      for (size_t i = l; i < text_end && blank; ++i) {
        blank = isspace((unsigned char)lx->s[i]) && lx->s[i] != '\n';
      }
      if (at_line_start && blank) text_end = l;
    }
    ATLAS_RETURN_IF_ERROR(push_text(lx, lx->pos, text_end, lx->pos));
    bool strip_after = false, keep_newline = false;
    if (kind == '#') {
      size_t e = p;
      while (e + 1 < lx->n && !(lx->s[e] == '#' && lx->s[e + 1] == '}')) ++e;
      if (e + 1 >= lx->n)
        return err_at(lx, t, "unterminated comment ({# without #})");
      strip_after = e > p && lx->s[e - 1] == '-';
      keep_newline = e > p && lx->s[e - 1] == '+';
      lx->pos = e + 2;
    } else {
      jinja_tok *b = push(lx, kind == '%' ? JT_BLOCK_BEGIN : JT_VAR_BEGIN, t);
      if (!b) return oom();
      lx->pos = p;
      if (kind == '%') {
        size_t q = p;
        while (q < lx->n && isspace((unsigned char)lx->s[q])) ++q;
        if (q + 3 <= lx->n && memcmp(lx->s + q, "raw", 3) == 0 &&
            (q + 3 >= lx->n ||
             !(isalnum((unsigned char)lx->s[q + 3]) || lx->s[q + 3] == '_'))) {
          return err_at(lx, t, "construct 'raw' is not supported");
        }
      }
      ATLAS_RETURN_IF_ERROR(
          lex_tag(lx, kind == '%', &strip_after, &keep_newline, t));
    }
    if (strip_after) {
      while (lx->pos < lx->n && isspace((unsigned char)lx->s[lx->pos]))
        lx->pos++;
    } else if (kind != '{' && !keep_newline && lx->pos < lx->n &&
               lx->s[lx->pos] == '\n') {
      lx->pos++;  // trim_blocks
    }
    line_starting = lx->pos > 0 && lx->s[lx->pos - 1] == '\n';
  }
  jinja_tok *e = push(lx, JT_EOF, lx->n);
  return e ? ATLAS_OK : oom();
}

atlas_status atlas_jinja_lex(const char *source, size_t len,
                             jinja_toks *out_toks) {
  memset(out_toks, 0, sizeof(*out_toks));
  // Newlines normalised to \n and one trailing newline dropped, as Jinja2 does.
  char *s = malloc(len + 1);
  if (!s) return oom();
  size_t n = 0;
  for (size_t i = 0; i < len; ++i) {
    if (source[i] == '\r') {
      s[n++] = '\n';
      if (i + 1 < len && source[i + 1] == '\n') ++i;
    } else {
      s[n++] = source[i];
    }
  }
  if (n > 0 && s[n - 1] == '\n') --n;
  s[n] = '\0';
  lexer lx = {.s = s, .n = n, .out = out_toks};
  atlas_status st = lex_all(&lx);
  free(s);
  if (st != ATLAS_OK) atlas_jinja_toks_free(out_toks);
  return st;
}

void atlas_jinja_toks_free(jinja_toks *toks) {
  for (size_t i = 0; i < toks->n; ++i) {
    free(toks->v[i].name);
    json_decref(toks->v[i].value);
  }
  free(toks->v);
  memset(toks, 0, sizeof(*toks));
}

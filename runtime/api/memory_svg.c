#include "atlas/runtime/api/memory_svg.h"

#include <string.h>
#include <utf8proc.h>

// Text as XML character data: markup escaped, and what XML 1.0 cannot hold
// (control characters, bytes that are not UTF-8) written as U+FFFD, so a
// model name of any bytes still gives a well-formed file.
static void put_text(FILE *out, const char *s) {
  const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)s;
  while (*p != 0) {
    utf8proc_int32_t c = -1;
    utf8proc_ssize_t n = utf8proc_iterate(p, -1, &c);
    if (n <= 0) {  // not UTF-8: one byte becomes U+FFFD
      fputs("\xEF\xBF\xBD", out);
      ++p;
      continue;
    }
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0xFFFE ||
        c == 0xFFFF) {
      fputs("\xEF\xBF\xBD", out);
    } else if (c == '<') {
      fputs("&lt;", out);
    } else if (c == '>') {
      fputs("&gt;", out);
    } else if (c == '&') {
      fputs("&amp;", out);
    } else if (c == '"') {
      fputs("&quot;", out);
    } else {
      fwrite(p, 1, (size_t)n, out);
    }
    p += n;
  }
}

static const char kHotFill[] = "#d9485f";
static const char kWarmFill[] = "#f08c3a";
static const char kColdFill[] = "#4c8dd6";
static const char kFoldedFill[] = "#a3a9b5";

// What the colours and the bar lengths mean.
static void put_legend(FILE *out, int x, int y) {
  static const char *const fills[] = {kHotFill, kWarmFill, kColdFill,
                                      kFoldedFill};
  static const char *const labels[] = {
      "over 50% of live bytes", "10% to 50%", "under 10%",
      "smaller sites folded together (--top, --min-mb)"};
  fprintf(out,
          "<g id=\"legend\" font-size=\"12\" fill=\"#39425a\">\n"
          "<text x=\"%d\" y=\"%d\">Legend: bar length is live bytes "
          "relative to the biggest site; colour is the share of all "
          "live bytes.</text>\n",
          x, y);
  int cx = x;
  for (size_t i = 0; i < sizeof(fills) / sizeof(fills[0]); ++i) {
    fprintf(out,
            "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" "
            "rx=\"2\" fill=\"%s\"/>\n<text x=\"%d\" y=\"%d\">%s</text>\n",
            cx, y + 14, fills[i], cx + 20, y + 26, labels[i]);
    cx += 20 + 7 * (int)strlen(labels[i]) + 24;
  }
  fputs("</g>\n", out);
}

atlas_status atlas_memory_svg_write(const atlas_site_report *report,
                                    const char *title, FILE *out) {
  // Columns: bars, then the amount, then the site, so labels never overlap.
  const int width = 1120, bar_left = 20, bar_max = 420, row_h = 34, top = 70;
  const int amount_x = bar_left + bar_max + 12, site_x = amount_x + 230;
  // Room for the rows, then the legend under them.
  int legend_y = top + (int)report->row_count * row_h + 16;
  int height = legend_y + 60;
  size_t biggest = report->row_count > 0 ? report->rows[0].bytes : 1;
  if (biggest == 0) biggest = 1;
  char total[32];
  atlas_format_bytes(report->live_bytes, total, sizeof(total));
  fprintf(
      out,
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
      "font-family=\"DejaVu Sans, Helvetica, sans-serif\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"#fbfbfd\"/>\n"
      "<text x=\"20\" y=\"32\" font-size=\"20\" font-weight=\"bold\" "
      "fill=\"#1d2433\">",
      width, height);
  put_text(out, title);
  fprintf(out,
          "</text>\n<text x=\"20\" y=\"54\" font-size=\"13\" fill=\"#5a6378\">"
          "%s live in %zu allocations, by call site</text>\n",
          total, report->live_count);
  for (size_t i = 0; i < report->row_count; ++i) {
    const atlas_site_total *r = &report->rows[i];
    int y = top + (int)i * row_h;
    double frac = (double)r->bytes / (double)biggest;
    int w = (int)(frac * bar_max);
    if (w < 2) w = 2;
    // Share of the total decides the colour: hot sites stand out.
    double share =
        report->live_bytes ? (double)r->bytes / (double)report->live_bytes : 0;
    const char *fill = r->site.file == NULL ? kFoldedFill
                       : share > 0.5        ? kHotFill
                       : share > 0.1        ? kWarmFill
                                            : kColdFill;
    char amount[32];
    atlas_format_bytes(r->bytes, amount, sizeof(amount));
    fprintf(out,
            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"22\" rx=\"3\" "
            "fill=\"%s\"><title>%zu bytes</title></rect>\n",
            bar_left, y, w, fill, r->bytes);
    fprintf(out,
            "<text x=\"%d\" y=\"%d\" font-size=\"13\" fill=\"#1d2433\">%s "
            "(%.1f%%) in %zu</text>\n",
            amount_x, y + 16, amount, share * 100.0, r->count);
    fprintf(out,
            "<text x=\"%d\" y=\"%d\" font-size=\"12\" fill=\"#39425a\" "
            "font-family=\"DejaVu Sans Mono, monospace\">",
            site_x, y + 16);
    if (r->site.file != NULL) {
      char site[512];
      snprintf(site, sizeof(site), "%s:%d (%s)", r->site.file, r->site.line,
               r->site.func);
      put_text(out, site);
    } else {
      fprintf(out, "%zu smaller sites", r->sites);
    }
    fputs("</text>\n", out);
  }
  put_legend(out, bar_left, legend_y);
  fputs("</svg>\n", out);
  if (ferror(out)) {
    return atlas_status_make(ATLAS_STATUS_IO, "writing the SVG failed");
  }
  return ATLAS_OK;
}

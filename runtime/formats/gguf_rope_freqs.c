// Llama 3's rope scaling from a GGUF file's rope_freqs.weight
// (gguf_model.h): convert_hf_to_gguf writes, for each of the head's
// head_dim / 2 frequencies, the factor that transformers' llama3 rope
// divides it by: 1 for short wavelengths, `factor` for long ones, a smooth
// ramp between. The parameters are found again: Llama 3's own
// (low_freq_factor 1, high_freq_factor 4) with an original context of a
// power of two first, else from the ramp's frequencies. Whatever is found
// must give back every stored factor, or the tensor is refused by name.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/formats/gguf_model.h"

#define RAMP_TOLERANCE 1e-5

// The factors convert_hf_to_gguf computes (in float32, as torch does).
static void llama3_factors(double theta, uint64_t head_dim,
                           const atlas_gguf_llama3_rope *p, float *out) {
  const float two_pi = 2.0f * 3.14159265358979323846f;
  const float old = (float)p->original_max_positions;
  const float lf = (float)p->low_freq_factor, hf = (float)p->high_freq_factor;
  const float factor = (float)p->factor;
  for (uint64_t i = 0; i < head_dim / 2; ++i) {
    float freq =
        1.0f / powf((float)theta, (float)(2 * i) / (float)(uint32_t)head_dim);
    float wavelen = two_pi / freq;
    if (wavelen < old / hf) {
      out[i] = 1.0f;
    } else if (wavelen > old / lf) {
      out[i] = factor;
    } else {
      float smooth = (old / wavelen - lf) / (hf - lf);
      out[i] = 1.0f / ((1.0f - smooth) / factor + smooth);
    }
  }
}

static bool matches(double theta, uint64_t head_dim,
                    const atlas_gguf_llama3_rope *p, const float *stored,
                    float *scratch) {
  llama3_factors(theta, head_dim, p, scratch);
  for (uint64_t i = 0; i < head_dim / 2; ++i) {
    if (fabs((double)scratch[i] - (double)stored[i]) >
        RAMP_TOLERANCE * fabs((double)stored[i])) {
      return false;
    }
  }
  return true;
}

// The ramp's two ends from its frequencies: a smoothed factor v at
// wavelength w says s = (1/v - 1/factor) / (1 - 1/factor), and
// s = (B / w - 1) / (B / A - 1) for the ramp's ends A < B, a line in 1 / w.
static bool fit_ramp(double theta, uint64_t head_dim, const float *stored,
                     double factor, double *out_a, double *out_b) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  int n = 0;
  for (uint64_t i = 0; i < head_dim / 2; ++i) {
    double v = stored[i];
    if (!(v > 1.0 + 1e-6 && v < factor * (1.0 - 1e-6))) continue;
    double freq = pow(theta, -(double)(2 * i) / (double)head_dim);
    double x = freq / (2 * 3.14159265358979323846);  // 1 / wavelength
    double s = (1.0 / v - 1.0 / factor) / (1.0 - 1.0 / factor);
    sx += x, sy += s, sxx += x * x, sxy += x * s;
    ++n;
  }
  double det = n * sxx - sx * sx;
  if (n < 2 || det == 0) return false;
  double slope = (n * sxy - sx * sy) / det, icept = (sy - slope * sx) / n;
  if (!(icept < 0) || !(slope > 0)) return false;
  // s = slope x + icept: B / (B/A - 1) = slope, -1 / (B/A - 1) = icept.
  double ratio = 1.0 - 1.0 / icept;  // B / A
  *out_b = -slope / icept;
  *out_a = *out_b / ratio;
  return *out_a > 0 && *out_b > *out_a;
}

static atlas_status refuse(const char *why) {
  return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                           "GGUF: rope_freqs.weight %s", why);
}

atlas_status atlas_gguf_llama3_rope_from_freqs(const atlas_gguf *g,
                                               uint64_t head_dim, double theta,
                                               atlas_gguf_llama3_rope *out) {
  memset(out, 0, sizeof(*out));
  const atlas_gguf_tensor *t = atlas_gguf_find_tensor(g, "rope_freqs.weight");
  if (t == NULL) return ATLAS_OK;
  if (t->type != ATLAS_GGUF_TYPE_F32 || t->n_dims != 1 ||
      t->ne[0] != head_dim / 2 || head_dim < 2) {
    return refuse(
        "is not F32 with one factor for each of the head's "
        "frequencies");
  }
  float *stored = malloc((size_t)head_dim * sizeof(float));
  if (stored == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "GGUF: out of host memory reading rope_freqs");
  }
  float *scratch = stored + head_dim / 2;
  atlas_status status = atlas_gguf_read(g, t, 0, t->bytes, stored);
  double factor = 0;
  for (uint64_t i = 0; status == ATLAS_OK && i < head_dim / 2; ++i) {
    if (!(stored[i] >= 1.0f) || !isfinite(stored[i])) {
      status = refuse(
          "holds a factor below 1 or not finite: not llama3 rope "
          "scaling");
    }
    factor = fmax(factor, stored[i]);
  }
  if (status == ATLAS_OK && factor == 1.0) {  // every factor 1: no scaling
    free(stored);
    return ATLAS_OK;
  }
  atlas_gguf_llama3_rope p = {true, factor, 1.0, 4.0, 0};
  bool found = false;
  // Llama 3's own ramp, with an original context of a power of two.
  for (int k = 4; status == ATLAS_OK && !found && k <= 24; ++k) {
    p.original_max_positions = (uint64_t)1 << k;
    found = matches(theta, head_dim, &p, stored, scratch);
  }
  double a = 0, b = 0;
  if (status == ATLAS_OK && !found &&
      fit_ramp(theta, head_dim, stored, factor, &a, &b)) {
    p.original_max_positions = 8192;
    p.low_freq_factor = 8192.0 / b;
    p.high_freq_factor = 8192.0 / a;
    found = matches(theta, head_dim, &p, stored, scratch);
  }
  if (status == ATLAS_OK && !found) {
    status = refuse(
        "is not llama3 rope scaling of any factor, low and high "
        "frequency factor and original context Atlas can find");
  }
  free(stored);
  if (status == ATLAS_OK) *out = p;
  return status;
}

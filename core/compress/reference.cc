// The scalar reference kernels: today's loops of each compressor, kept as they were (see reference.h).
#include "core/compress/reference.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cfloat>
#include <cmath>
#include <functional>

#include "core/check.h"
#include "core/compress/cast.h"
#include "core/compress/common.h"
#include "core/compress/minmax_uint8.h"

namespace bagua::compress_reference {

using namespace compress_detail;

namespace {

size_t minmax_record_bytes(size_t len) {
  return MinMaxUint8Compressor::kHeaderBytes + align_up(len, MinMaxUint8Compressor::kAlignBytes);
}

}  // namespace

std::pair<float, float> chunk_min_max(const float* x, size_t len) {
  constexpr size_t kLanes = 8;
  float min[kLanes], max[kLanes];
  for (size_t l = 0; l < kLanes; ++l)
    min[l] = max[l] = x[0];
  size_t j = 0;
  for (; j + kLanes <= len; j += kLanes) {
    for (size_t l = 0; l < kLanes; ++l) {
      min[l] = x[j + l] < min[l] ? x[j + l] : min[l];
      max[l] = x[j + l] > max[l] ? x[j + l] : max[l];
    }
  }
  for (; j < len; ++j) {
    min[0] = x[j] < min[0] ? x[j] : min[0];
    max[0] = x[j] > max[0] ? x[j] : max[0];
  }
  for (size_t l = 1; l < kLanes; ++l) {
    min[0] = min[l] < min[0] ? min[l] : min[0];
    max[0] = max[l] > max[0] ? max[l] : max[0];
  }
  return {min[0], max[0]};
}

void minmax_uint8_encode(const float* x, size_t n, size_t chunk_size, uint8_t* y) {
  constexpr size_t kHeaderBytes = MinMaxUint8Compressor::kHeaderBytes;
  const Chunking chunks(n, chunk_size);
  const size_t stride = minmax_record_bytes(chunks.chunk);
  for (size_t i = 0; i < chunks.count; ++i) {
    const float* chunk = x + chunks.begin(i);
    const size_t len = chunks.length(i);
    uint8_t* record = y + i * stride;

    const auto [min, max] = chunk_min_max(chunk, len);
    store_f32(record, min);
    store_f32(record + 4, max);
    std::memset(record + 8, 0, kHeaderBytes - 8);

    const MinMaxUint8Compressor::Levels l = MinMaxUint8Compressor::levels(min, max);
    uint8_t* q = record + kHeaderBytes;
    for (size_t j = 0; j < len; ++j) {
      float level = rint_even(chunk[j] * l.scale);
      level =
          level < l.upper_bound ? level : l.upper_bound;  // CUDA min(): a NaN level becomes the bound
      float v = level - l.lower_bound;
      v = v > 0.0f ? v : 0.0f;  // saturate to [0, 255]
      v = v < 255.0f ? v : 255.0f;
      q[j] = static_cast<uint8_t>(static_cast<int32_t>(v));
    }
    std::memset(q + len, 0, align_up(len, MinMaxUint8Compressor::kAlignBytes) - len);
  }
}

void minmax_uint8_decode(const uint8_t* y, size_t n, size_t chunk_size, float* x) {
  const Chunking chunks(n, chunk_size);
  const size_t stride = minmax_record_bytes(chunks.chunk);
  for (size_t i = 0; i < chunks.count; ++i) {
    const uint8_t* record = y + i * stride;
    const MinMaxUint8Compressor::Levels l =
        MinMaxUint8Compressor::levels(load_f32(record), load_f32(record + 4));
    const uint8_t* q = record + MinMaxUint8Compressor::kHeaderBytes;
    float* chunk = x + chunks.begin(i);
    const size_t len = chunks.length(i);
    for (size_t j = 0; j < len; ++j)
      chunk[j] = (static_cast<float>(q[j]) + l.lower_bound) / l.scale;
  }
}

float sign_scale(const float* x, size_t len) {
  double sum = 0;
  for (size_t j = 0; j < len; ++j)
    sum += std::fabs(x[j]);
  return static_cast<float>(sum / static_cast<double>(len));
}

void sign_encode(const float* x, size_t n, size_t chunk_size, uint8_t* y) {
  const Chunking chunks(n, chunk_size);
  for (size_t i = 0; i < chunks.count; ++i)
    store_f32(y + 4 * i, sign_scale(x + chunks.begin(i), chunks.length(i)));
  uint8_t* bits = y + 4 * chunks.count;
  const size_t full_bytes = n / 8;
  for (size_t b = 0; b < full_bytes; ++b) {
    const float* e = x + 8 * b;
    uint8_t byte = 0;
    for (int k = 0; k < 8; ++k)
      byte |= static_cast<uint8_t>((e[k] >= 0.0f ? 1u : 0u) << k);
    bits[b] = byte;
  }
  if (n % 8) {
    uint8_t byte = 0;
    for (size_t e = 8 * full_bytes; e < n; ++e)
      byte |= static_cast<uint8_t>((x[e] >= 0.0f ? 1u : 0u) << (e % 8));
    bits[full_bytes] = byte;
  }
}

void sign_decode(const uint8_t* y, size_t n, size_t chunk_size, float* x) {
  const Chunking chunks(n, chunk_size);
  const uint8_t* bits = y + 4 * chunks.count;
  for (size_t i = 0; i < chunks.count; ++i) {
    const float scale = load_f32(y + 4 * i);
    const size_t begin = chunks.begin(i);
    const size_t end = begin + chunks.length(i);
    // Branch-free (the bits are random): flip the sign bit of the scale where the element's bit is 0.
    const uint32_t magnitude = std::bit_cast<uint32_t>(scale);
    for (size_t e = begin; e < end; ++e) {
      const uint32_t negative = ((bits[e / 8] >> (e % 8)) & 1u) ^ 1u;
      x[e] = std::bit_cast<float>(magnitude ^ (negative << 31));
    }
  }
}

namespace {

template <uint16_t (*Convert)(float)>
void narrow(const float* x, size_t n, uint8_t* y) {
  for (size_t i = 0; i < n; ++i) {
    const uint16_t h = Convert(x[i]);
    std::memcpy(y + 2 * i, &h, 2);
  }
}

template <float (*Convert)(uint16_t)>
void widen(const uint8_t* y, size_t n, float* x) {
  for (size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, y + 2 * i, 2);
    x[i] = Convert(h);
  }
}

}  // namespace

void fp16_encode(const float* x, size_t n, uint8_t* y) {
  narrow<f32_to_f16_bits>(x, n, y);
}
void fp16_decode(const uint8_t* y, size_t n, float* x) {
  widen<f16_bits_to_f32>(y, n, x);
}
void bf16_encode(const float* x, size_t n, uint8_t* y) {
  narrow<f32_to_bf16_bits>(x, n, y);
}
void bf16_decode(const uint8_t* y, size_t n, float* x) {
  widen<bf16_bits_to_f32>(y, n, x);
}

void topk_encode(const float* x, size_t n, size_t k, uint8_t* y, std::vector<uint32_t>& candidates) {
  // The radix select of topk.cc: a histogram of the magnitudes' top 11 bits (a NaN's key counts as
  // infinity's) picks the bucket of the k-th largest, nth_element among its keys finds it exactly.
  auto key = [x](size_t i) {
    const uint32_t bits = std::bit_cast<uint32_t>(x[i]) & 0x7FFFFFFFu;
    return bits > 0x7F800000u ? 0x7F800000u : bits;
  };
  constexpr int kShift = 20;  // 31 magnitude bits: the top 11 make 2048 buckets
  std::array<size_t, (size_t{1} << (31 - kShift))> histogram{};
  for (size_t i = 0; i < n; ++i)
    ++histogram[key(i) >> kShift];
  size_t bucket = histogram.size() - 1;
  size_t above = 0;  // elements in buckets above `bucket`
  while (above + histogram[bucket] < k)
    above += histogram[bucket--];
  candidates.clear();
  for (size_t i = 0; i < n; ++i) {
    if ((key(i) >> kShift) == bucket) candidates.push_back(key(i));
  }
  const auto kth = candidates.begin() + static_cast<ptrdiff_t>(k - above - 1);
  std::nth_element(candidates.begin(), kth, candidates.end(), std::greater<uint32_t>());
  const uint32_t threshold = *kth;
  for (uint32_t c : candidates)
    above += c > threshold;
  size_t ties_left = k - above;

  size_t j = 0;
  for (size_t i = 0; i < n && j < k; ++i) {
    const uint32_t m = key(i);
    if (m > threshold || (m == threshold && ties_left > 0)) {
      if (m == threshold) --ties_left;
      const auto index = static_cast<int32_t>(i);
      std::memcpy(y + 4 * j, &index, 4);
      store_f32(y + 4 * k + 4 * j, x[i]);
      ++j;
    }
  }
  BAGUA_CHECK_EQ(j, k, "topk encode: elements kept");
}

void qsgd_encode(const float* x, size_t n, size_t chunk_size, uint32_t levels, uint64_t seed,
                 uint64_t step, uint8_t* y) {
  const Chunking chunks(n, chunk_size);
  const float s = static_cast<float>(levels);
  const int level_bits = std::bit_width(levels), code_bits = level_bits + 1;
  Rng rng = Rng::for_step(seed, step);

  // The bit stream: codes are or-ed into `pending` above its `pending_bits` bits, whole bytes flushed.
  uint8_t* stream = y + 4 * chunks.count;
  uint64_t pending = 0;
  int pending_bits = 0;
  for (size_t i = 0; i < chunks.count; ++i) {
    const float* chunk = x + chunks.begin(i);
    const size_t len = chunks.length(i);
    double squares = 0;
    for (size_t j = 0; j < len; ++j)
      squares += static_cast<double>(chunk[j]) * chunk[j];
    const auto norm = static_cast<float>(std::sqrt(squares));
    store_f32(y + 4 * i, norm);
    // qsgd.h's arithmetic: where s / norm overflows, x and norm scaled by 2^64 (exactly) first.
    float prescale = 1.0f;
    float levels_per_unit = norm > 0 && std::isfinite(norm) ? s / norm : 0.0f;
    if (!std::isfinite(levels_per_unit)) {
      prescale = 0x1p64f;
      levels_per_unit = s / (norm * prescale);
    }

    for (size_t j = 0; j < len; ++j) {
      float r = (std::fabs(chunk[j]) * prescale) * levels_per_unit;
      if (!(r >= 0.0f)) r = 0.0f;                                         // NaN (a non-finite input)
      const auto floor_r = static_cast<float>(static_cast<uint32_t>(r));  // r >= 0: truncation is floor
      const float u = rng.uniform();
      float level = floor_r + (u < r - floor_r ? 1.0f : 0.0f);
      level = level < s ? level : s;
      const auto l = static_cast<uint32_t>(level);
      const uint32_t negative = (l != 0 && chunk[j] < 0.0f) ? 1u : 0u;
      pending |= static_cast<uint64_t>(l | (negative << level_bits)) << pending_bits;
      pending_bits += code_bits;
      while (pending_bits >= 8) {
        *stream++ = static_cast<uint8_t>(pending);
        pending >>= 8;
        pending_bits -= 8;
      }
    }
  }
  if (pending_bits > 0) *stream = static_cast<uint8_t>(pending);
}

void qsgd_decode(const uint8_t* y, size_t n, size_t chunk_size, uint32_t levels, float* x) {
  const Chunking chunks(n, chunk_size);
  const float s = static_cast<float>(levels);
  const int level_bits = std::bit_width(levels), code_bits = level_bits + 1;
  const uint32_t level_mask = (1u << level_bits) - 1u;
  const uint8_t* stream = y + 4 * chunks.count;
  uint64_t pending = 0;
  int pending_bits = 0;
  for (size_t i = 0; i < chunks.count; ++i) {
    const float unit = load_f32(y + 4 * i) / s;
    // qsgd.h: l unit saturates at FLT_MAX where unit is finite (it rounds past it only for a norm
    // within s ulps of FLT_MAX); a non-finite unit keeps its inf or NaN.
    const float cap = std::isfinite(unit) ? FLT_MAX : INFINITY;
    float* chunk = x + chunks.begin(i);
    const size_t len = chunks.length(i);
    for (size_t j = 0; j < len; ++j) {
      while (pending_bits < code_bits) {
        pending |= static_cast<uint64_t>(*stream++) << pending_bits;
        pending_bits += 8;
      }
      const auto code = static_cast<uint32_t>(pending & ((uint64_t{1} << code_bits) - 1u));
      pending >>= code_bits;
      pending_bits -= code_bits;
      float magnitude = static_cast<float>(code & level_mask) * unit;
      if (magnitude > cap) magnitude = cap;
      chunk[j] = (code >> level_bits) ? -magnitude : magnitude;
    }
  }
}

void add_scaled(const float* x, float a, const float* e, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i)
    out[i] = x[i] + a * e[i];
}

}  // namespace bagua::compress_reference

// core/buffer.h and core/ops.h: dtype sizes and names, materialized and meta buffers, slicing,
// reinterpreting, typed access, and the element-wise operations (no-ops on meta buffers, which still
// report their byte size).
#include "core/buffer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/ops.h"

namespace bagua {
namespace {

TEST(DType, SizesAndNames) {
  EXPECT_EQ(size_of(DType::kF32), 4u);
  EXPECT_EQ(size_of(DType::kF64), 8u);
  EXPECT_EQ(size_of(DType::kF16), 2u);
  EXPECT_EQ(size_of(DType::kBF16), 2u);
  EXPECT_EQ(size_of(DType::kU8), 1u);
  EXPECT_EQ(size_of(DType::kI32), 4u);
  EXPECT_EQ(size_of(DType::kI64), 8u);
  EXPECT_EQ(to_string(DType::kF32), "f32");
  EXPECT_EQ(to_string(DType::kBF16), "bf16");
  EXPECT_EQ(to_string(DType::kI64), "i64");
  EXPECT_EQ(dtype_of<float>(), DType::kF32);
  EXPECT_EQ(dtype_of<int32_t>(), DType::kI32);
  EXPECT_EQ(to_string(Memory::kMeta), "meta");
  EXPECT_EQ(to_string(ReduceOp::kMax), "max");
}

TEST(Buffer, HostBuffersHoldTheirElements) {
  const Buffer b = Buffer::host(DType::kF64, 5);
  EXPECT_EQ(b.count(), 5u);
  EXPECT_EQ(b.dtype(), DType::kF64);
  EXPECT_EQ(b.bytes(), Bytes(40));
  EXPECT_FALSE(b.is_meta());
  EXPECT_TRUE(b.view().is_host());
  fill(b, 2.5);
  for (double v : b.as<double>())
    EXPECT_EQ(v, 2.5);
  // Typed access checks the dtype.
  EXPECT_THROW(b.as<float>(), InternalError);
}

TEST(Buffer, MetaBuffersHaveASizeAndNoStorage) {
  const Buffer m = Buffer::meta(DType::kF32, 1 << 20);
  EXPECT_TRUE(m.is_meta());
  EXPECT_EQ(m.bytes(), Bytes(4 << 20));
  EXPECT_EQ(m.view().data(), nullptr);
  // Every data operation is a no-op, and typed access is refused.
  fill(m, 1.0);
  scale(m, 2.0);
  axpy(m, 1.0, m);
  reduce(m, m, ReduceOp::kSum);
  EXPECT_THROW(m.as<float>(), InternalError);
  // A buffer made like a meta one is meta; its slices are meta.
  const Buffer like = Buffer::like(m, DType::kU8, 10);
  EXPECT_TRUE(like.is_meta());
  EXPECT_EQ(like.bytes(), Bytes(10));
  EXPECT_TRUE(m.view().slice(10, 5).is_meta());
}

TEST(BufferView, SliceSeesTheSameElements) {
  const Buffer b = Buffer::host(DType::kI32, 10);
  auto all = b.as<int32_t>();
  for (int i = 0; i < 10; ++i)
    all[static_cast<size_t>(i)] = i;
  const BufferView s = b.view().slice(3, 4);
  EXPECT_EQ(s.count(), 4u);
  EXPECT_EQ(s.bytes(), Bytes(16));
  EXPECT_EQ(s.as<int32_t>()[0], 3);
  EXPECT_EQ(s.as<int32_t>()[3], 6);
  fill(s, -1);  // writes through to the buffer, elements 3..6 only
  EXPECT_EQ(all[2], 2);
  EXPECT_EQ(all[3], -1);
  EXPECT_EQ(all[6], -1);
  EXPECT_EQ(all[7], 7);
  // Empty slices at either end are valid; past the end is not.
  EXPECT_EQ(b.view().slice(10, 0).count(), 0u);
  EXPECT_EQ(b.view().slice(0, 0).count(), 0u);
  EXPECT_THROW(b.view().slice(8, 3), InternalError);
  EXPECT_THROW(b.view().slice(11, 0), InternalError);
}

TEST(BufferView, ReinterpretKeepsTheBytes) {
  const Buffer b = Buffer::host(DType::kF32, 3);
  const BufferView bytes = b.view().reinterpret(DType::kU8);
  EXPECT_EQ(bytes.count(), 12u);
  EXPECT_EQ(bytes.data(), b.view().data());
  EXPECT_EQ(b.view().reinterpret(DType::kF16).count(), 6u);
  EXPECT_THROW(b.view().reinterpret(DType::kF64), InternalError);  // 12 bytes are not whole f64s
}

TEST(Ops, ElementWiseArithmetic) {
  const Buffer x = Buffer::host(DType::kF32, 4);
  const Buffer y = Buffer::host(DType::kF32, 4);
  auto xs = x.as<float>(), ys = y.as<float>();
  for (size_t i = 0; i < 4; ++i) {
    xs[i] = static_cast<float>(i);       // 0 1 2 3
    ys[i] = static_cast<float>(10 - i);  // 10 9 8 7
  }
  axpy(y, 0.5, x);  // y := y + 0.5 x = 10 9.5 9 8.5
  EXPECT_EQ(ys[0], 10.0f);
  EXPECT_EQ(ys[3], 8.5f);
  scale(x, 2.0);  // 0 2 4 6
  EXPECT_EQ(xs[3], 6.0f);
  reduce(y, x, ReduceOp::kMin);  // min(10 9.5 9 8.5, 0 2 4 6)
  EXPECT_EQ(ys[0], 0.0f);
  EXPECT_EQ(ys[3], 6.0f);
  reduce(y, x, ReduceOp::kSum);  // 0 4 8 12
  EXPECT_EQ(ys[3], 12.0f);
  copy(x, y);
  EXPECT_EQ(xs[2], 8.0f);
  // Shapes must agree.
  const Buffer other = Buffer::host(DType::kF64, 4);
  const Buffer shorter = Buffer::host(DType::kF32, 3);
  EXPECT_THROW(reduce(x, other, ReduceOp::kSum), InternalError);
  EXPECT_THROW(reduce(x, shorter, ReduceOp::kSum), InternalError);
}

// reduce, axpy and scale on the host are vectorised (core/buffer.cc); they must give what the plain
// element-by-element loops give, bit for bit: random floats mixed with NaNs, infinities and zeros of
// both signs, lengths around every vector width, views one element off alignment, and a source that
// overlaps its destination one element ahead (where the loop reads already-updated elements).
// One thing is left open: the sum of two NaNs is a NaN whose sign and payload are those of either
// operand (IEEE 754-2008, 6.2.3: "the payload of one of the input NaNs"; x86 takes the first source
// operand, and GCC may swap the operands of a commutative +: at -O1 the test's own loop and the
// library's differ). Such elements, and those their NaN flows into, must be NaN on both sides; every
// other element, NaNs included, is compared bit for bit.
template <class T>
std::vector<T> mixed_values(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> normal(0.0, 3.0);
  // NaNs of both signs and two payloads: where both operands are NaN, which one the result carries
  // depends on the operand order.
  T payload_nan = std::numeric_limits<T>::quiet_NaN();
  reinterpret_cast<unsigned char*>(&payload_nan)[0] ^= 0x5A;
  const T specials[] = {std::numeric_limits<T>::quiet_NaN(),
                        -std::numeric_limits<T>::quiet_NaN(),
                        payload_nan,
                        -std::numeric_limits<T>::infinity(),
                        std::numeric_limits<T>::infinity(),
                        T(0),
                        -T(0),
                        T(1)};
  std::vector<T> v(n);
  for (T& x : v)
    x = gen() % 5 == 0 ? specials[gen() % std::size(specials)] : static_cast<T>(normal(gen));
  return v;
}

// `either_nan[i]`: element i is a sum of two NaNs, or of a NaN that was one (see above).
template <class T>
void expect_same_bits(const std::vector<T>& a, const std::vector<T>& b, const std::string& what,
                      const std::vector<bool>& either_nan = {}) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (i < either_nan.size() && either_nan[i]) {
      ASSERT_TRUE(std::isnan(a[i]) && std::isnan(b[i]))
          << what << ": element " << i << ": " << a[i] << " vs the loop's " << b[i];
      continue;
    }
    ASSERT_EQ(std::memcmp(&a[i], &b[i], sizeof(T)), 0)
        << what << ": element " << i << ": " << a[i] << " vs the loop's " << b[i];
  }
}

// e := e + x in the test's loop, marking in `either_nan` a result whose NaN is either operand's.
template <class T>
void add_marking_nan_choice(T& e, T x, bool e_marked, bool x_marked,
                            std::vector<bool>::reference mark) {
  const bool chosen = (std::isnan(e) && std::isnan(x)) || e_marked || x_marked;
  e += x;
  mark = chosen && std::isnan(e);
}

template <class T>
void check_vectorised_ops() {
  for (size_t n : {0u, 1u, 3u, 4u, 7u, 8u, 9u, 15u, 17u, 33u, 1001u}) {
    for (size_t offset : {0u, 1u}) {
      const auto d0 = mixed_values<T>(n + offset + 1, static_cast<uint32_t>(n));
      const auto s0 = mixed_values<T>(n + offset + 1, static_cast<uint32_t>(n + 100));
      const std::string what = "n=" + std::to_string(n) + " offset=" + std::to_string(offset);
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax}) {
        auto d = d0, s = s0, expected = d0;
        std::vector<bool> either_nan(expected.size());
        for (size_t i = 0; i < n; ++i) {
          T& e = expected[offset + i];
          const T x = s0[offset + i];
          if (op == ReduceOp::kSum)
            add_marking_nan_choice(e, x, false, false, either_nan[offset + i]);
          else
            e = op == ReduceOp::kMin ? std::min(e, x) : std::max(e, x);
        }
        reduce(BufferView::of(std::span<T>(d)).slice(offset, n),
               BufferView::of(std::span<T>(s)).slice(offset, n), op);
        expect_same_bits(d, expected, "reduce " + to_string(op) + " " + what, either_nan);
      }
      {
        auto y = d0, expected = d0;
        std::vector<bool> either_nan(expected.size());
        const T a = static_cast<T>(-0.75);
        for (size_t i = 0; i < n; ++i)
          add_marking_nan_choice(expected[offset + i], a * s0[offset + i], false, false,
                                 either_nan[offset + i]);
        auto x = s0;
        axpy(BufferView::of(std::span<T>(y)).slice(offset, n), -0.75,
             BufferView::of(std::span<T>(x)).slice(offset, n));
        expect_same_bits(y, expected, "axpy " + what, either_nan);
      }
      {
        auto x = d0, expected = d0;
        for (size_t i = 0; i < n; ++i)
          expected[offset + i] *= static_cast<T>(1.0 / 3.0);
        scale(BufferView::of(std::span<T>(x)).slice(offset, n), 1.0 / 3.0);
        expect_same_bits(x, expected, "scale " + what);
      }
      {
        // The source one element ahead of the destination, and one behind.
        for (int shift : {1, -1}) {
          auto buf = d0, expected = d0;
          std::vector<bool> either_nan(expected.size());
          const size_t dst = shift > 0 ? 0 : 1, src = shift > 0 ? 1 : 0;
          const size_t m = n ? std::min(n, buf.size() - 1) : 0;
          for (size_t i = 0; i < m; ++i)
            add_marking_nan_choice(expected[dst + i], expected[src + i], either_nan[dst + i],
                                   either_nan[src + i], either_nan[dst + i]);
          const BufferView all = BufferView::of(std::span<T>(buf));
          reduce(all.slice(dst, m), all.slice(src, m), ReduceOp::kSum);
          expect_same_bits(buf, expected, "overlapping reduce " + what, either_nan);
        }
      }
    }
  }
}

TEST(Ops, VectorisedOpsMatchTheElementLoops) {
  check_vectorised_ops<float>();
  check_vectorised_ops<double>();
}

}  // namespace
}  // namespace bagua

namespace bagua {
namespace {
#if defined(__FLT16_MAX__) && defined(__GNUC__) && !defined(__clang__)
// The coded fp16 sum, min and max give the compiler's binary16 arithmetic (GCC: each operation on
// _Float16 computed in float and rounded once) for every pair of a spread of bit patterns: zeros,
// subnormals, normals near each rounding boundary, the largest finite values (overflow to infinity),
// infinities.
TEST(Buffer, Fp16ReduceIsTheCorrectlyRoundedBinary16Operation) {
  std::vector<uint16_t> patterns;
  for (uint32_t h = 0; h < 0x10000u; h += 37)
    if (((h >> 10) & 0x1f) != 0x1f || (h & 0x3ff) == 0) patterns.push_back(static_cast<uint16_t>(h));
  for (uint16_t h : {0x0000, 0x8000, 0x0001, 0x03ff, 0x0400, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x3c00})
    patterns.push_back(h);
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax}) {
    for (size_t i = 0; i < patterns.size(); i += 7) {
      std::vector<uint16_t> d(patterns.size(), patterns[i]);
      std::vector<uint16_t> s = patterns;
      const Buffer dst = Buffer::host(DType::kF16, d.size());
      const Buffer src = Buffer::host(DType::kF16, s.size());
      std::memcpy(dst.view().data(), d.data(), d.size() * 2);
      std::memcpy(src.view().data(), s.data(), s.size() * 2);
      reduce(dst.view(), src.view(), op);
      const auto* got = static_cast<const uint16_t*>(dst.view().data());
      for (size_t k = 0; k < s.size(); ++k) {
        const _Float16 a = std::bit_cast<_Float16>(patterns[i]);
        const _Float16 b = std::bit_cast<_Float16>(s[k]);
        const _Float16 r = op == ReduceOp::kSum   ? static_cast<_Float16>(a + b)
                           : op == ReduceOp::kMin ? std::min(a, b)
                                                  : std::max(a, b);
        ASSERT_EQ(got[k], std::bit_cast<uint16_t>(r))
            << std::hex << patterns[i] << " op " << static_cast<int>(op) << " " << s[k];
      }
    }
  }
}
#endif
}  // namespace
}  // namespace bagua

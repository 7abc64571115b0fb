// CudaSpace against the host space: every operation, on every dtype it supports, gives the host's bits.
// Inputs mix ordinary values with the cases where implementations part ways: -0 against +0 (min/max
// keep the first operand unless the second is strictly beyond), NaN, infinities, subnormals, and
// products whose fused multiply-add would round differently.
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "tests/runtime/nccl/support.h"

namespace bagua {
namespace {

using testing::first_byte_difference;
using testing::first_value_difference;
using testing::NcclTest;
using testing::on_host;
using testing::TestRng;

const std::vector<size_t> kCounts = {0, 1, 7, 1003, (size_t{1} << 20) + 3};

template <class T>
std::vector<T> values(size_t n, uint64_t seed) {
  TestRng rng(seed);
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      switch (rng.next() % 16) {
        case 0:
          v[i] = T(0);
          break;
        case 1:
          v[i] = -T(0);
          break;
        case 2:
          v[i] = std::numeric_limits<T>::infinity();
          break;
        case 3:
          v[i] = std::numeric_limits<T>::denorm_min() * T(rng.next() % 1000);
          break;
        case 4:
          v[i] = std::numeric_limits<T>::quiet_NaN();
          break;
        default:
          v[i] = static_cast<T>(rng.uniform(-1000.0, 1000.0));
          break;
      }
    } else {
      v[i] = static_cast<T>(static_cast<int64_t>(rng.next() % 2000001) - 1000000);
    }
  }
  return v;
}

template <class T>
BufferView host_view(std::vector<T>& v) {
  return BufferView::of(std::span<T>(v));
}

TEST_F(NcclTest, CopyBetweenHostAndDeviceAndWithinTheDevice) {
  for (size_t count : kCounts) {
    const std::vector<float> data = values<float>(count, 1 + count);
    Buffer a = on_device(data);
    Buffer b(device(), DType::kF32, count);
    copy(b, a);  // device -> device
    EXPECT_EQ(first_byte_difference(on_host<float>(b), data), "") << "count " << count;
    if (count > 3) {
      // Slices at element offsets 1 and 2 (unaligned to anything larger than a float).
      copy(b.view().slice(1, count - 3), a.view().slice(2, count - 3));
      std::vector<float> expected = data;
      for (size_t i = 0; i + 3 < count; ++i)
        expected[1 + i] = data[2 + i];
      EXPECT_EQ(first_byte_difference(on_host<float>(b), expected), "") << "slices, count " << count;
    }
  }
}

template <class T>
void check_reduce(NcclTest& test, const Space& device, ReduceOp op, size_t count, bool host_source) {
  std::vector<T> dst = values<T>(count, 10 + count);
  std::vector<T> src = values<T>(count, 20 + count);
  Buffer d(device, dtype_of<T>(), count);
  copy(d, host_view(dst));
  Buffer s(device, dtype_of<T>(), count);
  copy(s, host_view(src));
  reduce(d, host_source ? host_view(src) : s.view(), op);
  host_space().reduce(host_view(dst), host_view(src), op);
  EXPECT_EQ(first_value_difference(on_host<T>(d), dst), "")
      << to_string(dtype_of<T>()) << " " << to_string(op) << " count " << count
      << (host_source ? " (host source)" : "");
}

TEST_F(NcclTest, ReduceMatchesTheHostBitForBit) {
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax}) {
    for (size_t count : kCounts) {
      for (bool host_source : {false, true}) {
        check_reduce<float>(*this, device(), op, count, host_source);
        check_reduce<double>(*this, device(), op, count, host_source);
        check_reduce<int32_t>(*this, device(), op, count, host_source);
        check_reduce<int64_t>(*this, device(), op, count, host_source);
      }
    }
  }
}

template <class T>
void check_scale_axpy(const Space& device, size_t count) {
  // a = -1.7 is not a power of two, so a * x is rounded; a fused multiply-add in axpy would change
  // bits.
  constexpr double kA = -1.7;
  std::vector<T> x = values<T>(count, 30 + count);
  std::vector<T> y = values<T>(count, 40 + count);
  Buffer dx(device, dtype_of<T>(), count);
  copy(dx, host_view(x));
  Buffer dy(device, dtype_of<T>(), count);
  copy(dy, host_view(y));

  scale(dx, 0.3);
  host_space().scale(host_view(x), 0.3);
  EXPECT_EQ(first_value_difference(on_host<T>(dx), x), "")
      << "scale " << to_string(dtype_of<T>()) << " " << count;

  axpy(dy, kA, dx);
  host_space().axpy(host_view(y), kA, host_view(x));
  EXPECT_EQ(first_value_difference(on_host<T>(dy), y), "")
      << "axpy " << to_string(dtype_of<T>()) << " " << count;

  axpy(dy, kA, host_view(x));  // a host x, staged
  host_space().axpy(host_view(y), kA, host_view(x));
  EXPECT_EQ(first_value_difference(on_host<T>(dy), y), "")
      << "axpy, host x, " << to_string(dtype_of<T>()) << " " << count;
}

TEST_F(NcclTest, ScaleAndAxpyMatchTheHostBitForBit) {
  for (size_t count : kCounts) {
    check_scale_axpy<float>(device(), count);
    check_scale_axpy<double>(device(), count);
  }
}

template <class T>
void check_fill(const Space& device, double v, size_t count) {
  Buffer d(device, dtype_of<T>(), count);
  fill(d, v);
  std::vector<T> expected(count);
  host_space().fill(host_view(expected), v);
  EXPECT_EQ(first_value_difference(on_host<T>(d), expected), "")
      << "fill " << to_string(dtype_of<T>()) << " with " << v << ", count " << count;
}

TEST_F(NcclTest, FillMatchesTheHost) {
  for (size_t count : kCounts) {
    check_fill<float>(device(), -2.5e-3, count);
    check_fill<double>(device(), 1.0 / 3.0, count);
    check_fill<uint8_t>(device(), 200.0, count);
    check_fill<int32_t>(device(), -7.0, count);
    check_fill<int64_t>(device(), 1e12, count);
  }
}

TEST_F(NcclTest, SpaceNameAndKernels) {
  const auto& space = dynamic_cast<const runtime::nccl::CudaSpace&>(device());
  EXPECT_EQ(space.memory(), Memory::kDevice);
  EXPECT_EQ(space.name(), "cuda:" + std::to_string(world().device()));
  EXPECT_NE(space.kernels(), nullptr);
}

}  // namespace
}  // namespace bagua

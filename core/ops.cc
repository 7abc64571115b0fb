#include "core/ops.h"

namespace bagua {

// A meta source or destination makes the operation a no-op; otherwise the destination's space does it
// (a device space also accepts host sources for copy), except that a copy from device to host memory is
// the device space's (the host space cannot read device memory).
void copy(const BufferView& dst, const BufferView& src) {
  if (src.is_meta()) return meta_space().copy(dst, src);
  const bool device_to_host = dst.memory() == Memory::kHost && src.memory() == Memory::kDevice;
  (device_to_host ? src.space() : dst.space()).copy(dst, src);
}
void reduce(const BufferView& dst, const BufferView& src, ReduceOp op) {
  (src.is_meta() ? meta_space() : dst.space()).reduce(dst, src, op);
}
void scale(const BufferView& x, double a) {
  x.space().scale(x, a);
}
void axpy(const BufferView& y, double a, const BufferView& x) {
  (x.is_meta() ? meta_space() : y.space()).axpy(y, a, x);
}
void fill(const BufferView& x, double v) {
  x.space().fill(x, v);
}

}  // namespace bagua

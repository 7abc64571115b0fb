#include "core/ops.h"

namespace bagua {

// A meta source or destination makes the operation a no-op; otherwise the destination's space does it
// (a device space also accepts host sources for copy).
void copy(const BufferView& dst, const BufferView& src) {
  (src.is_meta() ? meta_space() : dst.space()).copy(dst, src);
}
void reduce(const BufferView& dst, const BufferView& src, ReduceOp op) {
  (src.is_meta() ? meta_space() : dst.space()).reduce(dst, src, op);
}
void scale(const BufferView& x, double a) { x.space().scale(x, a); }
void axpy(const BufferView& y, double a, const BufferView& x) {
  (x.is_meta() ? meta_space() : y.space()).axpy(y, a, x);
}
void fill(const BufferView& x, double v) { x.space().fill(x, v); }

}  // namespace bagua

#include <algorithm>

#include "core/algorithms/algorithm.h"

namespace bagua {

std::vector<Bucket> make_buckets(const std::vector<Layer>& layers, Bytes budget) {
  std::vector<Bucket> buckets;
  Bucket open;
  int64_t open_bytes = 0;
  auto close = [&] {
    open.index = static_cast<int>(buckets.size());
    buckets.push_back(std::move(open));
    open = Bucket{};
    open_bytes = 0;
  };
  // Backward order: the last layer's gradients are ready first.
  for (int l = static_cast<int>(layers.size()) - 1; l >= 0; --l) {
    const Layer& layer = layers[static_cast<size_t>(l)];
    if (open.layers.empty()) {
      open.offset = layer.offset;
    } else {
      BAGUA_CHECK_EQ(layer.offset + layer.count, open.offset, "layers must be contiguous");
      open.offset = layer.offset;
    }
    open.count += layer.count;
    open.layers.push_back(l);
    open_bytes += static_cast<int64_t>(layer.count * sizeof(float));
    if (open_bytes >= budget.count()) close();
  }
  if (!open.layers.empty()) close();
  return buckets;
}

}  // namespace bagua

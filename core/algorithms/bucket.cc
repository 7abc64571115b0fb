#include <algorithm>

#include "core/algorithms/algorithm.h"

namespace bagua {

std::vector<Bucket> make_buckets(const std::vector<Layer>& layers, Bytes budget) {
  const Bytes limits[] = {budget};
  return make_buckets(layers, limits);
}

std::vector<Bucket> make_buckets(const std::vector<Layer>& layers, std::span<const Bytes> limits) {
  BAGUA_CHECK(!limits.empty(), "make_buckets needs at least one limit");
  std::vector<Bucket> buckets;
  Bucket open;
  int64_t open_bytes = 0;
  auto limit = [&] { return limits[std::min(buckets.size(), limits.size() - 1)].count(); };
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
    if (open_bytes >= limit()) close();
  }
  if (!open.layers.empty()) close();
  return buckets;
}

}  // namespace bagua

// Layers for the small test models of the trainer and algorithm tests.
#pragma once

#include <string>
#include <vector>

#include "core/models/model.h"

namespace bagua::testing {

// Layers of `sizes` parameters, back to back, named prefix0, prefix1, ..., each costing `forward` and
// `backward` of profiled time.
inline std::vector<Layer> contiguous_layers(const std::vector<size_t>& sizes, const std::string& prefix,
                                            Time forward, Time backward) {
  std::vector<Layer> layers;
  size_t offset = 0;
  for (size_t count : sizes) {
    Layer layer;
    layer.name = prefix + std::to_string(layers.size());
    layer.offset = offset;
    layer.count = count;
    layer.forward.duration = forward;
    layer.backward.duration = backward;
    offset += count;
    layers.push_back(layer);
  }
  return layers;
}

}  // namespace bagua::testing

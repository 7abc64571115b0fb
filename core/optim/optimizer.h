// Optimizers: w := w - update(g), with their own state, on any space (meta: state is meta too).
#pragma once

#include <memory>
#include <string>

#include "core/buffer.h"
#include "core/clock.h"
#include "core/registry.h"

namespace bagua {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual std::string name() const = 0;
  // One update of `w` (count n) with gradient `g`.
  virtual void step(const BufferView& w, const BufferView& g) = 0;
  // Modelled device cost of one step on n parameters (charged on the compute stream).
  virtual Work cost(size_t n) const = 0;
  virtual double learning_rate() const = 0;
};

// factory(params, number of parameters, a buffer whose space the state should share)
using OptimizerRegistry = Registry<Optimizer, size_t, const BufferView&>;
void register_optimizers(OptimizerRegistry& registry);

}  // namespace bagua

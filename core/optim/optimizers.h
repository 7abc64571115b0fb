// SGD, momentum SGD and Adam, with PyTorch's update rules and documented defaults (torch.optim.SGD and
// torch.optim.Adam documentation, PyTorch 2.x).
//
// Terms: w the weights, g the gradient, lr the learning rate, wd the weight decay (an L2 term added to
// the gradient, as PyTorch does: d = g + wd w), t the step count starting at 1.
//   sgd        w := w - lr d
//   momentum   buf := d at t = 1, else momentum buf + d;  w := w - lr (d + momentum buf) if nesterov,
//              else w := w - lr buf                                     (dampening 0, PyTorch's
//              default)
//   adam       m := beta1 m + (1 - beta1) d;  v := beta2 v + (1 - beta2) d^2;
//              w := w - lr (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps)   (Kingma & Ba 2015)
//   adamw      w := (1 - lr wd) w, then adam's step with d = g (decoupled weight decay: Loshchilov &
//              Hutter 2019, "Decoupled Weight Decay Regularization", ICLR; torch.optim.AdamW)
//
// State (momentum buffer, Adam moments) lives in the space of the buffer given to the factory
// (Buffer::like): meta stays meta, so every step on meta weights is a no-op. sgd and momentum are
// written with core/ops.h and so run on every space; adam's element-wise square root and division are
// implemented for host memory (f32, f64); on a device space adam is a ConfigError for now.
//
// Modelled cost of a step (cost(n)): memory-bound, one fused pass over n elements; bytes = elements
// read and written per parameter x element size:
//   sgd       read w, g; write w                       3 per parameter, 2 FLOPs (+2 with weight decay)
//   momentum  read w, g, buf; write buf, w             5 per parameter, 4 FLOPs (+2)
//   adam      read w, g, m, v; write m, v, w           7 per parameter, 12 FLOPs (+2)
//   adamw     as adam                                   7 per parameter, 12 FLOPs (+2 for the decay)
#pragma once

#include "core/optim/optimizer.h"

namespace bagua {

ParamSchema sgd_schema();
ParamSchema momentum_schema();
ParamSchema adam_schema();
ParamSchema adamw_schema();

std::unique_ptr<Optimizer> make_sgd(const Params& params, size_t n, const BufferView& like);
std::unique_ptr<Optimizer> make_momentum(const Params& params, size_t n, const BufferView& like);
std::unique_ptr<Optimizer> make_adam(const Params& params, size_t n, const BufferView& like);
std::unique_ptr<Optimizer> make_adamw(const Params& params, size_t n, const BufferView& like);

}  // namespace bagua

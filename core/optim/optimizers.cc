#include "core/optim/optimizers.h"

#include <cmath>

#include "core/check.h"
#include "core/ops.h"

namespace bagua {

namespace {

void check_sizes(const char* who, size_t n, const BufferView& w, const BufferView& g) {
  BAGUA_CHECK_EQ(w.count(), n, std::string(who) + ": weight count");
  BAGUA_CHECK_EQ(g.count(), n, std::string(who) + ": gradient count");
}

Work memory_bound(size_t n, size_t element_bytes, double flops_per_element, int touches_per_element) {
  Work w;
  w.flops = flops_per_element * static_cast<double>(n);
  w.memory = Bytes(static_cast<int64_t>(n * element_bytes * static_cast<size_t>(touches_per_element)));
  return w;
}

class Sgd final : public Optimizer {
 public:
  Sgd(double lr, double weight_decay, size_t n, size_t element_bytes)
      : lr_(lr), weight_decay_(weight_decay), n_(n), element_bytes_(element_bytes) {}
  std::string name() const override { return "sgd"; }
  void step(const BufferView& w, const BufferView& g) override {
    check_sizes("sgd", n_, w, g);
    // w := w - lr (g + wd w) = (1 - lr wd) w - lr g
    if (weight_decay_ != 0) scale(w, 1.0 - lr_ * weight_decay_);
    axpy(w, -lr_, g);
  }
  Work cost(size_t n) const override {
    return memory_bound(n, element_bytes_, weight_decay_ != 0 ? 4 : 2, 3);
  }
  double learning_rate() const override { return lr_; }

 private:
  double lr_, weight_decay_;
  size_t n_, element_bytes_;
};

class Momentum final : public Optimizer {
 public:
  Momentum(double lr, double momentum, bool nesterov, double weight_decay, size_t n,
           const BufferView& like)
      : lr_(lr),
        momentum_(momentum),
        nesterov_(nesterov),
        weight_decay_(weight_decay),
        n_(n),
        element_bytes_(size_of(like.dtype())),
        buf_(Buffer::like(like, like.dtype(), n)) {}
  std::string name() const override { return "momentum"; }
  void step(const BufferView& w, const BufferView& g) override {
    check_sizes("momentum", n_, w, g);
    // buf := d (first step) or momentum buf + d, with d = g + wd w.
    if (first_) {
      copy(buf_, g);
      first_ = false;
    } else {
      scale(buf_, momentum_);
      axpy(buf_, 1.0, g);
    }
    if (weight_decay_ != 0) axpy(buf_, weight_decay_, w);
    if (nesterov_) {
      // w := w - lr (d + momentum buf) = (1 - lr wd) w - lr g - lr momentum buf
      if (weight_decay_ != 0) scale(w, 1.0 - lr_ * weight_decay_);
      axpy(w, -lr_, g);
      axpy(w, -lr_ * momentum_, buf_);
    } else {
      axpy(w, -lr_, buf_);
    }
  }
  Work cost(size_t n) const override {
    return memory_bound(n, element_bytes_, weight_decay_ != 0 ? 6 : 4, 5);
  }
  double learning_rate() const override { return lr_; }

 private:
  double lr_, momentum_;
  bool nesterov_;
  double weight_decay_;
  size_t n_, element_bytes_;
  Buffer buf_;
  bool first_ = true;
};

class Adam final : public Optimizer {
 public:
  // decoupled: AdamW's weight decay (w := w - lr wd w before the Adam step) instead of Adam's L2 term.
  Adam(double lr, double beta1, double beta2, double eps, double weight_decay, bool decoupled, size_t n,
       const BufferView& like)
      : decoupled_(decoupled),
        lr_(lr),
        beta1_(beta1),
        beta2_(beta2),
        eps_(eps),
        weight_decay_(weight_decay),
        n_(n),
        element_bytes_(size_of(like.dtype())),
        m_(Buffer::like(like, like.dtype(), n)),
        v_(Buffer::like(like, like.dtype(), n)) {
    fill(m_, 0.0);
    fill(v_, 0.0);
  }
  std::string name() const override { return decoupled_ ? "adamw" : "adam"; }
  void step(const BufferView& w, const BufferView& g) override {
    check_sizes("adam", n_, w, g);
    ++t_;
    if (w.is_meta() || g.is_meta() || m_.is_meta()) return;
    if (!w.is_host() || !g.is_host() || !m_.view().is_host())
      throw ConfigError("optimizer 'adam': only host and meta buffers are supported, weights are in " +
                        to_string(w.memory()) + " memory");
    BAGUA_CHECK(w.dtype() == g.dtype() && w.dtype() == m_.dtype(),
                "adam: weight, gradient and state dtypes differ");
    if (w.dtype() == DType::kF32)
      update<float>(w, g);
    else if (w.dtype() == DType::kF64)
      update<double>(w, g);
    else
      throw ConfigError("optimizer 'adam': weights of dtype " + to_string(w.dtype()) +
                        " (expected f32 or f64)");
  }
  Work cost(size_t n) const override {
    return memory_bound(n, element_bytes_, weight_decay_ != 0 ? 14 : 12, 7);
  }
  double learning_rate() const override { return lr_; }

 private:
  template <class S>
  void update(const BufferView& wv, const BufferView& gv) {
    S* w = wv.as<S>().data();
    const S* g = gv.as<S>().data();
    S* m = m_.as<S>().data();
    S* v = v_.as<S>().data();
    const double correction1 = 1.0 - std::pow(beta1_, static_cast<double>(t_));
    const double correction2 = 1.0 - std::pow(beta2_, static_cast<double>(t_));
    // PyTorch's arrangement: w -= (lr / c1) m / (sqrt(v) / sqrt(c2) + eps)
    const S step_size = static_cast<S>(lr_ / correction1);
    const S root_c2 = static_cast<S>(std::sqrt(correction2));
    const S b1 = static_cast<S>(beta1_), b2 = static_cast<S>(beta2_), eps = static_cast<S>(eps_);
    const S wd = static_cast<S>(decoupled_ ? 0.0 : weight_decay_);
    const S shrink = static_cast<S>(decoupled_ ? 1.0 - lr_ * weight_decay_ : 1.0);
    for (size_t i = 0; i < n_; ++i) {
      if (decoupled_) w[i] *= shrink;
      const S d = g[i] + wd * w[i];
      m[i] = b1 * m[i] + (S(1) - b1) * d;
      v[i] = b2 * v[i] + (S(1) - b2) * d * d;
      w[i] -= step_size * m[i] / (std::sqrt(v[i]) / root_c2 + eps);
    }
  }

  bool decoupled_;
  double lr_, beta1_, beta2_, eps_, weight_decay_;
  size_t n_, element_bytes_;
  Buffer m_, v_;
  int64_t t_ = 0;
};

void check_state_space(const char* who, const BufferView& like) {
  if (like.memory() == Memory::kDevice)
    throw ConfigError(std::string("optimizer '") + who +
                      "': device buffers are not supported yet (space '" + like.space().name() + "')");
}

}  // namespace

// Defaults: PyTorch 2.x documentation of torch.optim.SGD (lr 1e-3, momentum 0, dampening 0,
// weight_decay 0, nesterov False) and torch.optim.Adam (lr 1e-3, betas (0.9, 0.999), eps 1e-8,
// weight_decay 0). The momentum optimizer's 0.9 is the value of PyTorch's SGD documentation example
// (SGD(..., lr=0.1, momentum=0.9)) and of He et al. 2016 (ResNet, arXiv:1512.03385, Sec. 3.4).

ParamSchema sgd_schema() {
  ParamSchema s;
  s.add_double("lr", 1e-3, "learning rate", 0.0, std::nullopt, /*min_exclusive=*/true)
      .add_double("weight_decay", 0.0, "L2 penalty added to the gradient", 0.0);
  return s;
}

ParamSchema momentum_schema() {
  ParamSchema s;
  s.add_double("lr", 1e-3, "learning rate", 0.0, std::nullopt, /*min_exclusive=*/true)
      .add_double("momentum", 0.9, "momentum factor", 0.0, 1.0)
      .add_bool("nesterov", false, "Nesterov momentum")
      .add_double("weight_decay", 0.0, "L2 penalty added to the gradient", 0.0);
  return s;
}

ParamSchema adam_schema() {
  ParamSchema s;
  s.add_double("lr", 1e-3, "learning rate", 0.0, std::nullopt, /*min_exclusive=*/true)
      .add_double("beta1", 0.9, "decay of the first-moment estimate", 0.0, 1.0)
      .add_double("beta2", 0.999, "decay of the second-moment estimate", 0.0, 1.0)
      .add_double("eps", 1e-8, "added to the denominator for stability", 0.0, std::nullopt,
                  /*min_exclusive=*/true)
      .add_double("weight_decay", 0.0, "L2 penalty added to the gradient", 0.0);
  return s;
}

// AdamW: torch.optim.AdamW documentation (PyTorch 2.x): the defaults of Adam but weight_decay 1e-2.
ParamSchema adamw_schema() {
  ParamSchema s;
  s.add_double("lr", 1e-3, "learning rate", 0.0, std::nullopt, /*min_exclusive=*/true)
      .add_double("beta1", 0.9, "decay of the first-moment estimate", 0.0, 1.0)
      .add_double("beta2", 0.999, "decay of the second-moment estimate", 0.0, 1.0)
      .add_double("eps", 1e-8, "added to the denominator for stability", 0.0, std::nullopt,
                  /*min_exclusive=*/true)
      .add_double("weight_decay", 1e-2, "decoupled decay: w -= lr wd w before the Adam step", 0.0);
  return s;
}

std::unique_ptr<Optimizer> make_sgd(const Params& p, size_t n, const BufferView& like) {
  return std::make_unique<Sgd>(p.get_double("lr"), p.get_double("weight_decay"), n,
                               size_of(like.dtype()));
}

std::unique_ptr<Optimizer> make_momentum(const Params& p, size_t n, const BufferView& like) {
  return std::make_unique<Momentum>(p.get_double("lr"), p.get_double("momentum"),
                                    p.get_bool("nesterov"), p.get_double("weight_decay"), n, like);
}

namespace {

std::unique_ptr<Optimizer> make_adam_family(const char* who, bool decoupled, const Params& p, size_t n,
                                            const BufferView& like) {
  check_state_space(who, like);
  if (p.get_double("beta1") >= 1.0 || p.get_double("beta2") >= 1.0)
    throw ConfigError(std::string("optimizer '") + who + "': beta1 and beta2 must be below 1, got " +
                      std::to_string(p.get_double("beta1")) + " and " +
                      std::to_string(p.get_double("beta2")));
  return std::make_unique<Adam>(p.get_double("lr"), p.get_double("beta1"), p.get_double("beta2"),
                                p.get_double("eps"), p.get_double("weight_decay"), decoupled, n, like);
}

}  // namespace

std::unique_ptr<Optimizer> make_adam(const Params& p, size_t n, const BufferView& like) {
  return make_adam_family("adam", /*decoupled=*/false, p, n, like);
}

std::unique_ptr<Optimizer> make_adamw(const Params& p, size_t n, const BufferView& like) {
  return make_adam_family("adamw", /*decoupled=*/true, p, n, like);
}

void register_optimizers(OptimizerRegistry& registry) {
  registry.add("sgd", "plain SGD: w -= lr (g + wd w)", sgd_schema(), make_sgd);
  registry.add("momentum", "SGD with (Nesterov) momentum, PyTorch's formulation", momentum_schema(),
               make_momentum);
  registry.add("adam", "Adam with bias correction (Kingma & Ba 2015), PyTorch's formulation",
               adam_schema(), make_adam);
  registry.add("adamw",
               "Adam with decoupled weight decay (Loshchilov & Hutter 2019), PyTorch's formulation",
               adamw_schema(), make_adamw);
}

}  // namespace bagua

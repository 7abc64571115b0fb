#include "core/models/random.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "core/check.h"

namespace bagua {

uint64_t derive_seed(uint64_t seed, uint64_t stream) {
  // splitmix64 (Steele, Lea & Flood 2014) applied to seed + golden-ratio multiple of (stream + 1).
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (stream + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double Rng::uniform() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

double Rng::uniform_open() {
  // (k + 0.5) / 2^53 for k in [0, 2^53): never 0, never 1.
  return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53;
}

uint64_t Rng::below(uint64_t n) {
  BAGUA_CHECK(n > 0, "Rng::below(0)");
  // Reject the top 2^64 mod n values so that every residue is equally likely.
  const uint64_t limit =
      std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % n;
  uint64_t x;
  do
    x = next();
  while (x >= limit);
  return x % n;
}

double Rng::normal() {
  const double u1 = uniform_open();
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

double Rng::log_gamma(double shape) {
  BAGUA_CHECK(shape > 0, "gamma shape must be positive");
  if (shape < 1.0) {
    // Gamma(a) = Gamma(a + 1) * U^(1/a)
    const double boost = std::log(uniform_open()) / shape;
    return log_gamma(shape + 1.0) + boost;
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    const double x = normal();
    double v = 1.0 + c * x;
    if (v <= 0) continue;
    v = v * v * v;
    const double u = uniform_open();
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return std::log(d) + std::log(v);
  }
}

std::vector<double> Rng::dirichlet(double alpha, int k) {
  BAGUA_CHECK(k > 0, "dirichlet over no categories");
  std::vector<double> logs(static_cast<size_t>(k));
  for (double& l : logs)
    l = log_gamma(alpha);
  const double top = *std::max_element(logs.begin(), logs.end());
  double sum = 0;
  for (double& l : logs)
    sum += (l = std::exp(l - top));
  for (double& l : logs)
    l /= sum;
  return logs;
}

}  // namespace bagua

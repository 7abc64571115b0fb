// A self-contained, portable random number generator for synthetic data.
//
// The engine is std::mt19937_64, whose output sequence the C++ standard fixes exactly; the std::
// distributions are not portable across standard libraries, so every distribution is written out here:
//
//   uniform()       53 random bits scaled to [0, 1)
//   below(n)        an unbiased integer in [0, n) (the biased tail is rejected)
//   normal()        Box-Muller, one value per call (no cached second value: the sequence depends
//                   only on the calls made, never on hidden state)
//   log_gamma(a)    log of a Gamma(a, 1) sample: Marsaglia & Tsang (2000), "A simple method for
//                   generating gamma variables", ACM TOMS 26(3); for a < 1 their boost
//                   Gamma(a) = Gamma(a + 1) U^(1/a), kept in logarithms so that tiny shapes
//                   (alpha = 0.01) do not underflow to zero
//   dirichlet(a, k) k Gamma(a) samples normalized to sum 1 (in logarithms, for the same reason)
//
// Same seed, same calls -> same values. sqrt is correctly rounded everywhere; log, cos and exp come
// from the platform's libm, so results are bit-identical on one platform and agree to a few ulps across
// platforms.
#pragma once

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace bagua {

// A seed for an independent stream derived from a base seed (splitmix64 finalizer over seed and
// stream), so that the data set, the partition and the initial weights draw from unrelated sequences.
uint64_t derive_seed(uint64_t seed, uint64_t stream);

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}

  uint64_t next() { return engine_(); }
  double uniform();                // [0, 1)
  double uniform_open();           // (0, 1)
  uint64_t below(uint64_t n);      // [0, n), n > 0
  double normal();                 // N(0, 1)
  double log_gamma(double shape);  // log of a Gamma(shape, 1) sample, shape > 0
  std::vector<double> dirichlet(double alpha, int k);

  // Fisher-Yates with below().
  template <class T>
  void shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i)
      std::swap(v[i - 1], v[below(i)]);
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace bagua

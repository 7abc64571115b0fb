// The averaged model: the mean of the ranks' weights at each evaluation, and its test accuracy.
//
// Terms:
//   replica         rank r's weights w_r as evaluated after an iteration (TrainResult::evaluated_weights)
//   averaged model  w_avg := (1/P) sum_{r = 0}^{P-1} w_r over the P ranks: the float32 replicas summed
//                   in double precision in rank order (from w_0 itself), the sum divided by P and
//                   rounded once to float32
//
// Where replicas differ (decentralized and asynchronous methods, local SGD between averagings) the
// averaged model is what their theory bounds (D-PSGD: Lian et al. 2017, NeurIPS, main theorem) and what
// a user would deploy; where they agree bit for bit it is that replica bit for bit (P w is exact in
// double for P < 2^29, and (P w) / P is w again), so its accuracy is theirs.
//
// The replicas live on their ranks: rank 0 alone holds only its own, so every rank sends its replicas
// to rank 0, which asks each rank in turn (a token) and sums them as they arrive, in rank order. A
// gather after training, outside the timed iterations, the same on every runtime; a fixed order of the
// same double additions, so the accuracies are the same bit for bit on the simulator and under mpirun
// (an allreduce would sum in its own order). It must not move while any rank still trains: on the
// simulator its bytes would share links with that rank's last iteration and change its time. Hence
// the token, which rank 0 sends only once the caller knows every rank has finished (the runner calls
// it after gathering every rank's TrainResult on rank 0).
#pragma once

#include <vector>

#include "core/models/model.h"
#include "core/trainer/trainer.h"
#include "core/transport.h"

namespace bagua {

// Every rank of `group` calls it with its result (trained with keep_evaluated_weights: the same
// evaluations on every rank) and its model. Rank 0 gets, for each entry of mine.iterations, the test
// accuracy of the averaged model after that iteration (NaN where the iteration was not evaluated);
// the other ranks get an empty vector. Rank 0 calls it only when every rank has finished training
// (see above). Uses the tags below of `group`: give it a group no other operation uses meanwhile.
std::vector<double> averaged_model_accuracy(Transport& group, const Model& model,
                                            const TrainResult& mine);

// w_avg of `replicas` (equal sizes, at least one), as defined above.
std::vector<float> average_replicas(const std::vector<std::vector<float>>& replicas);

constexpr Tag kAveragedGoTag = 101;  // rank 0 -> r: send now
constexpr Tag kAveragedCountTag = 102;
constexpr Tag kAveragedWeightsTag = 103;

}  // namespace bagua

// The loss ops' kernel (loss.hpp).
#include "kernels/loss.hpp"

#include "support/error.hpp"

#include <algorithm>
#include <cmath>

namespace npuc::kernels {

void loss(const LossShape& s, double* x, const int64_t* target, const double* weight, double* loss, double* log_prob) {
  auto at = [&](int64_t n, int64_t ch, int64_t d) -> double& { return x[(n * s.c + ch) * s.d + d]; };
  if (s.softmax) {
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t d = 0; d < s.d; ++d) {
        double m = -INFINITY, sum = 0;
        for (int64_t ch = 0; ch < s.c; ++ch) m = std::max(m, at(n, ch, d));
        for (int64_t ch = 0; ch < s.c; ++ch) sum += std::exp(at(n, ch, d) - m);
        const double ls = std::log(sum);
        for (int64_t ch = 0; ch < s.c; ++ch) at(n, ch, d) = at(n, ch, d) - m - ls;
      }
    if (log_prob) std::copy_n(x, s.n * s.c * s.d, log_prob);
  }
  double loss_sum = 0, weight_sum = 0;
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t d = 0; d < s.d; ++d) {
      const int64_t t = target[n * s.d + d];
      double l = 0;
      if (!(s.ignoring && t == s.ignore_index)) {
        if (t < 0 || t >= s.c)
          fail(ErrorCode::kInvalidInput, "loss: target {} at [{}, {}] is outside the {} classes (and is not ignore_index)", t, n, d, s.c);
        const double w = weight ? weight[t] : 1.0;
        l = -w * at(n, t, d);
        loss_sum += l;
        weight_sum += w;
      }
      if (s.reduction == LossReduction::kNone) loss[n * s.d + d] = l;
    }
  if (s.reduction != LossReduction::kNone) loss[0] = s.reduction == LossReduction::kSum ? loss_sum : loss_sum / weight_sum;
}

}  // namespace npuc::kernels

// Deterministic kernels, process-wide (train.deterministic; PyTorch's
// torch.use_deterministic_algorithms): while on, ops whose fast kernels sum
// in an order that varies from run to run (float atomics on a GPU) sum in a
// fixed order instead, so that a run repeats bit for bit: on CUDA the
// embedding gradient (rows sorted by id, each summed in position order)
// and attention's dQ (a slab per key tile, summed in tile order), and no
// cuDNN attention backward. Every CPU kernel is deterministic anyway. Off
// by default: the fast kernels.
#ifndef TFM_CORE_DETERMINISTIC_H_
#define TFM_CORE_DETERMINISTIC_H_

namespace tfm {

void SetDeterministicKernels(bool on);
bool DeterministicKernels();

// Deterministic kernels on for a scope (tests), the setting before it back
// at its end.
class ScopedDeterministicKernels {
 public:
  ScopedDeterministicKernels() : previous_(DeterministicKernels()) {
    SetDeterministicKernels(true);
  }
  ~ScopedDeterministicKernels() { SetDeterministicKernels(previous_); }
  ScopedDeterministicKernels(const ScopedDeterministicKernels&) = delete;
  ScopedDeterministicKernels& operator=(const ScopedDeterministicKernels&) = delete;

 private:
  bool previous_;
};

}  // namespace tfm

#endif  // TFM_CORE_DETERMINISTIC_H_

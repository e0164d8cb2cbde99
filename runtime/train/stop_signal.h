// SIGINT and SIGTERM ask a training run to stop at the next safe point
// (between updates), where it writes a checkpoint and returns, instead of
// dying mid-update. A second signal of the same kind kills the process as
// usual, so a stuck run can still be interrupted.
#ifndef TFM_RUNTIME_TRAIN_STOP_SIGNAL_H_
#define TFM_RUNTIME_TRAIN_STOP_SIGNAL_H_

namespace tfm {

// Installs the handlers (idempotent).
void InstallStopSignalHandlers();

// The signal number received since installation (or the last Reset), or 0.
int StopSignalReceived();

// Clears a received signal (tests; a driver running several jobs).
void ResetStopSignal();

}  // namespace tfm

#endif  // TFM_RUNTIME_TRAIN_STOP_SIGNAL_H_

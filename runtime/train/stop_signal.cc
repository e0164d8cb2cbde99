#include "runtime/train/stop_signal.h"

#include <signal.h>

#include <atomic>

namespace tfm {
namespace {

std::atomic<int> received{0};

void OnSignal(int signal_number) {
  received.store(signal_number);
  // The next one of this kind takes the default action (terminate).
  ::signal(signal_number, SIG_DFL);
}

}  // namespace

void InstallStopSignalHandlers() {
  struct sigaction action = {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

int StopSignalReceived() { return received.load(); }

void ResetStopSignal() { received.store(0); }

}  // namespace tfm

// While a ferret command waits on a command it started (`ferret run`, `ferret watch`), SIGINT,
// SIGTERM and SIGHUP sent to ferret are passed on to that command, and ferret lives on to analyse
// what it recorded. A signal sent by a process (kill, sigqueue: si_code <= 0) is forwarded; one
// the kernel sends for the terminal (Ctrl-C, a hang-up: si_code > 0) reached the command already,
// in the same foreground process group, and is not sent twice. SIGQUIT is ignored meanwhile, as
// system() does.
#pragma once

#include <sys/types.h>

namespace ferret {

inline constexpr int kForwardedSignals[] = {2 /* SIGINT */, 15 /* SIGTERM */, 1 /* SIGHUP */};

class SignalForwarding {
 public:
  SignalForwarding();  // the handlers go in before the command starts, so none is lost between
  ~SignalForwarding();
  SignalForwarding(const SignalForwarding&) = delete;
  SignalForwarding& operator=(const SignalForwarding&) = delete;

  void forward_to(pid_t child);  // 0: the command has ended, forward nothing
  int forwarded() const;         // the last signal passed on, 0 when none
};

}  // namespace ferret

#include "base/signal_forwarding.h"

#include <signal.h>

namespace ferret {

namespace {

volatile sig_atomic_t g_child = 0;
volatile sig_atomic_t g_forwarded = 0;
struct sigaction g_old[3], g_old_quit;

void forward_signal(int sig, siginfo_t* info, void*) {
  if (info != nullptr && info->si_code > 0) return;  // the terminal's: the command has it already
  const pid_t child = g_child;
  if (child > 0) {
    ::kill(child, sig);
    g_forwarded = sig;
  }
}

}  // namespace

static_assert(SIGINT == 2 && SIGTERM == 15 && SIGHUP == 1);

SignalForwarding::SignalForwarding() {
  g_child = 0;
  g_forwarded = 0;
  struct sigaction forward {};
  forward.sa_sigaction = forward_signal;
  forward.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&forward.sa_mask);
  for (int i = 0; i < 3; ++i) sigaction(kForwardedSignals[i], &forward, &g_old[i]);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGQUIT, &ignore, &g_old_quit);
}

SignalForwarding::~SignalForwarding() {
  g_child = 0;
  for (int i = 0; i < 3; ++i) sigaction(kForwardedSignals[i], &g_old[i], nullptr);
  sigaction(SIGQUIT, &g_old_quit, nullptr);
}

void SignalForwarding::forward_to(pid_t child) { g_child = child; }
int SignalForwarding::forwarded() const { return g_forwarded; }

}  // namespace ferret

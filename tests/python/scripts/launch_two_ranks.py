"""Starts SCRIPT as two ranks with torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT) and waits for both; exits with the first non-zero status. (Debian 12's
torch 1.13 cannot run torch.distributed.run under Python 3.11: its --redirects default breaks.)
Usage: launch_two_ranks.py PORT SCRIPT [ARGS...]"""
import os
import subprocess
import sys


def main():
    port, script, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    children = []
    for rank in range(2):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=port)
        children.append(subprocess.Popen([sys.executable, script, *args], env=env))
    statuses = [child.wait() for child in children]
    sys.exit(next((s for s in statuses if s != 0), 0))


if __name__ == "__main__":
    main()

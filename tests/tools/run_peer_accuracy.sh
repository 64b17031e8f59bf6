#!/usr/bin/env bash
# CTest's accuracy.hta: tests/tools/peer_accuracy.py in the torch 2.x environment over the sample
# traces and, when present, the corpus. Skips (77) with a line saying why when the environment or
# HTA is missing. Arguments: VENV FERRET SOURCE_DIR CORPUS_DIR.
venv="$1" ferret="$2" source="$3" corpus="$4"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import hta" 2>/dev/null; then
  echo "SKIPPED: no HolisticTraceAnalysis in $venv (make venv installs it)"
  exit 77
fi
traces=("$source"/examples/traces/*.json.gz)
if [ -d "$corpus" ]; then
  traces+=($(ls "$corpus"/*.json "$corpus"/*.json.gz 2>/dev/null))
else
  echo "note: no corpus at $corpus: the sample traces only"
fi
exec "$venv/bin/python" "$source/tests/tools/peer_accuracy.py" --ferret "$ferret" --peers-doc "$source/docs/PEERS.md" \
  "${traces[@]}"

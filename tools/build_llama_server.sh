#!/usr/bin/env bash
# Build llama.cpp's llama-server from the source that the installed llama-cpp-python vendors,
# into DEST (`make llama-server` passes the folder the bench looks in). The same llama.cpp as the
# llama.cpp engine: the bench then compares editors, not kernels.
set -euo pipefail
python=${PYTHON:-python3}
case $python in  # a path relative to where it was called from: the build runs in DEST
    */*) python="$(cd "$(dirname "$python")" && pwd)/$(basename "$python")" ;;
esac
dest=$1
version=$("$python" -c 'from importlib.metadata import version; print(version("llama_cpp_python"))')
mkdir -p "$dest"
cd "$dest"
if [ ! -d "llama_cpp_python-$version" ]; then
    "$python" -m pip download --quiet --no-deps --no-binary :all: "llama-cpp-python==$version" -d .
    tar xzf "llama_cpp_python-$version.tar.gz"
    rm "llama_cpp_python-$version.tar.gz"
fi
source="llama_cpp_python-$version/vendor/llama.cpp"
flags=()  # NO_AMX (the Makefile's): the compiler flags the engine's llama.cpp was built with
if [ -n "${NO_AMX:-}" ]; then
    flags=(-DCMAKE_C_FLAGS="$NO_AMX" -DCMAKE_CXX_FLAGS="$NO_AMX")
fi
cmake -S "$source" -B "$source/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF "${flags[@]}" > build.log
cmake --build "$source/build" --target llama-server -j "$(nproc)" >> build.log
ln -sf "$source/build/bin/llama-server" llama-server
./llama-server --version

"""Runs llama.cpp's convert_hf_to_gguf.py (from the llama-cpp-python sdist, outside
the repo) on a submoe synth checkpoint.

The converter identifies a BPE tokenizer's pre-tokenizer by hashing how it
splits a fixed text and refuses tokenizers it has no hash for; the synth
checkpoints carry the embedded model's tokenizer, which it does not list. The
benchmark never tokenizes text on the llama.cpp side (llama-bench feeds token
ids), so the pre-tokenizer is declared "default" instead of refused.

  python llamacpp_convert.py LLAMA_CPP_DIR CHECKPOINT --outtype bf16 --outfile OUT.gguf
"""
import runpy
import sys


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    llama_dir = sys.argv[1]
    sys.path.insert(0, llama_dir)
    import conversion.base as base  # the converter's own module

    base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "default"
    script = llama_dir + "/convert_hf_to_gguf.py"
    sys.argv = [script] + sys.argv[2:]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()

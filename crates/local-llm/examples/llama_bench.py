# The llama.cpp side of docs/BENCHMARKS-LOG.md "mnemo-local-llm": the same prompt as
# examples/bench.rs, run by llama-cpp-python on one GGUF with 2 threads.
# Usage: python llama_bench.py FILE.gguf PROMPT_TOKENS GEN_TOKENS
import sys, time, resource
from llama_cpp import Llama
path, n_prompt, n_gen = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
facts = ["The user moved to Lisbon in March and works as a data engineer.",
         "They drink green tea, never coffee, and walk to work along the river.",
         "Their sister Ana visits every second weekend with her two children.",
         "The staging deploy key is rotated every thirty days by the ops team."]
s, i = "", 0
while len(s) < n_prompt * 4:
    s += "- [%d] %s\n" % (i, facts[i % 4]); i += 1
s += "\nSummarise the facts above in one paragraph."
prompt = "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\n" + s + "<|im_end|>\n<|im_start|>assistant\n"
if "qwen" in path.lower():
    prompt = prompt.replace("You are a helpful AI assistant named SmolLM, trained by Hugging Face", "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.")
llm = Llama(model_path=path, n_ctx=4096, n_threads=2, n_threads_batch=2, n_batch=128, verbose=False)
toks = llm.tokenize(prompt.encode(), add_bos=False, special=True)
t = time.time(); llm.eval(toks); tp = time.time() - t
t = time.time()
for _ in range(n_gen):
    tok = llm.sample(temp=0.0)
    llm.eval([tok])
tg = time.time() - t
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print("engine=llama.cpp threads=2 prompt_tokens=%d prompt_tok_s=%.1f gen_tokens=%d gen_tok_s=%.1f peak_rss_mb=%.0f" % (len(toks), len(toks)/tp, n_gen, n_gen/tg, rss))

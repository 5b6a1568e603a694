"""psutil's used memory, run live: the figure verl logs as perf/cpu_memory_used_gb (psutil.virtual_memory().used).

usage: memory_usage_oracle.py
  Prints psutil.virtual_memory().used in bytes.
"""
import psutil

print(psutil.virtual_memory().used)

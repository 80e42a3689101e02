"""placeholder"""
def autotune(*a, **k):
    raise NotImplementedError
class Autotuned: pass
def cache_dir(): pass

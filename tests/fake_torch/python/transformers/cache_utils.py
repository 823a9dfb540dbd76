"""A fake transformers.cache_utils.DynamicCache: per layer a key and a value tensor that grow at every
update. As the real one (which does torch.cat here), the new, larger tensors are allocated in THIS
file, and the previous ones die when replaced: the profiler tells KV cache tensors by this file."""
import torch


class DynamicCache:
    def __init__(self):
        self.key_cache = []
        self.value_cache = []

    @staticmethod
    def _bytes(states):
        return states.nbytes if isinstance(states, torch.Tensor) else int(states)

    def update(self, key_states, value_states, layer_idx, cache_kwargs=None):
        """key_states / value_states: the step's new keys and values (tensors, or their byte sizes).
        Returns the layer's whole key and value tensors."""
        key_bytes, value_bytes = self._bytes(key_states), self._bytes(value_states)
        if len(self.key_cache) <= layer_idx:
            self.key_cache.append(torch.empty(key_bytes, device="cuda"))
            self.value_cache.append(torch.empty(value_bytes, device="cuda"))
        else:
            old_k, old_v = self.key_cache[layer_idx], self.value_cache[layer_idx]
            self.key_cache[layer_idx] = torch.empty(old_k.nbytes + key_bytes, device=old_k.device)  # torch.cat
            self.value_cache[layer_idx] = torch.empty(old_v.nbytes + value_bytes, device=old_v.device)
            del old_k, old_v
        return self.key_cache[layer_idx], self.value_cache[layer_idx]

    def get_seq_length(self, layer_idx=0):
        return 0 if len(self.key_cache) <= layer_idx else self.key_cache[layer_idx].nbytes

    def __len__(self):
        return len(self.key_cache)

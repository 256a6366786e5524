"""The suite's private redis-server: the same throwaway-server helper the bench uses."""

from benchmarks.redis_process import PrivateRedis, free_port

__all__ = ["RedisServer", "free_port"]


class RedisServer(PrivateRedis):
    """Tests must never touch the machine's shared Redis on 6379."""

    def start(self, timeout_s: float = 10) -> "RedisServer":
        if self.port == 6379:
            raise RuntimeError("tests must never use the shared Redis on port 6379")
        return super().start(timeout_s)

# Sidekiq's bench jobs: the shapes of bench_shapes.py in Ruby, for `sidekiq -r` (Sidekiq
# 6.4 from Debian's ruby-sidekiq). Every job ends with the same one INCR of bench:done,
# here through Sidekiq's own Redis pool (its redis-rb client, with the hiredis driver
# where installed). `ruby sidekiq_jobs.rb cpu-body-ms` prints the cpu loop's median time.
require "sidekiq"

module BenchShapes
  DONE_KEY = "bench:done"
  IO_SLEEP_S = 0.005
  CPU_ROUNDS = 25_000

  def self.done
    Sidekiq.redis { |conn| conn.call("INCR", DONE_KEY) }
  end

  def self.spin(rounds = CPU_ROUNDS)
    total = 0
    rounds.times { |number| total = (total + number * number) % 1_000_003 }
    total
  end
end

class NoopJob
  include Sidekiq::Worker

  def perform
    BenchShapes.done
  end
end

class IoJob
  include Sidekiq::Worker

  def perform
    sleep BenchShapes::IO_SLEEP_S
    BenchShapes.done
  end
end

class CpuJob
  include Sidekiq::Worker

  def perform
    BenchShapes.spin
    BenchShapes.done
  end
end

if $PROGRAM_NAME == __FILE__ && ARGV[0] == "cpu-body-ms"
  samples = Array.new(15) do
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    BenchShapes.spin
    Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
  end
  puts format("%.3f", samples.sort[7] * 1000)
end

# frozen_string_literal: true

# Captures reference payloads from a real Sidekiq into tests/compat/golden/*.json.
#
# Run from the repository root (needs ruby, Sidekiq and redis-server on PATH):
#
#   ruby tests/compat/ruby/capture_goldens.rb [OUTPUT_DIR]
#
# OUTPUT_DIR defaults to tests/compat/golden; REDIS_SERVER names another redis-server.
#
# It starts a private redis-server on a Unix socket in a temporary directory (never
# the machine's Redis), pushes jobs through Sidekiq::Client, runs failing jobs through
# a real Sidekiq::Launcher (processor, retry handler, heartbeat) and writes each key
# exactly as Sidekiq stored it. Timestamps and jids are whatever this run produced;
# the tests compare field names, order and types, and the values that do not vary.

require "fileutils"
require "json"
require "logger"
require "tmpdir"

OUT = ARGV[0] ? File.expand_path(ARGV[0]) : File.expand_path("../golden", __dir__)
TIMEOUT_S = 15

def wait_for(what)
  deadline = Time.now + TIMEOUT_S
  until (value = yield)
    raise "timed out waiting for #{what}" if Time.now > deadline
    sleep 0.02
  end
  value
end

def start_redis(dir)
  socket = File.join(dir, "redis.sock")
  pid = Process.spawn(ENV.fetch("REDIS_SERVER", "redis-server"), "--port", "0",
    "--unixsocket", socket, "--save", "", "--appendonly", "no", "--dir", dir,
    out: File::NULL, err: File::NULL)
  wait_for("redis-server") { File.exist?(socket) }
  [pid, "unix://#{socket}"]
end

tmp = Dir.mktmpdir("sidekiq-goldens-")
redis_pid, url = start_redis(tmp)
ENV["REDIS_URL"] = url # Sidekiq's default connection reads it

require "sidekiq"
require "sidekiq/api"
require "sidekiq/launcher"
Sidekiq.logger.level = Logger::ERROR
Redis.silence_deprecations = true # redis-rb 4.8 warns about calls Sidekiq 6.4 makes

# The Ruby twins of tests/compat/jobs.py: same names, same options.
module Compat
  class Charge
    include Sidekiq::Worker
    sidekiq_options queue: "compat"
    def perform(*args)
    end
  end
end

class FailingJob
  include Sidekiq::Worker
  sidekiq_options queue: "low", retry: 5, backtrace: true
  def perform(card)
    raise ArgumentError, "card declined: #{card}"
  end
end

class DoomedJob
  include Sidekiq::Worker
  sidekiq_options retry: 0
  def perform(*args)
    raise "no retries for this one"
  end
end

class Hold
  include Sidekiq::Worker
  RELEASE = Queue.new
  def perform(marker)
    RELEASE.pop
  end
end

def redis(&block)
  Sidekiq.redis(&block)
end

def entries(key)
  redis do |conn|
    case conn.type(key)
    when "list" then conn.lrange(key, 0, -1).map { |member| {"member" => member} }
    when "zset"
      conn.zrange(key, 0, -1, with_scores: true).map { |m, s| {"member" => m, "score" => s} }
    when "hash" then conn.hgetall(key).sort.map { |f, v| {"field" => f, "value" => v} }
    when "set" then conn.smembers(key).sort.map { |member| {"member" => member} }
    when "string" then [{"value" => conn.get(key), "ttl_set" => conn.ttl(key) > 0}]
    else raise "#{key} is missing"
    end
  end
end

def write_golden(name, call, key)
  type = redis { |conn| conn.type(key) }
  golden = {"produced_by" => call, "key" => key, "type" => type, "entries" => entries(key)}
  File.write(File.join(OUT, "#{name}.json"), JSON.pretty_generate(golden) + "\n")
end

def fresh
  redis(&:flushdb)
end

EDGE_ARGS = ["Grüße aus Zürich – “quoted” 🚀", "line1\nline2\t\"q\" \\ back/slash",
  9007199254740993, -3.75, 0.1, 1.5e-07, false, nil, [], {}, {"nested" => {"list" => [1, 2.5]}}]

def capture_pushes
  fresh
  Sidekiq::Client.push("class" => "billing.tasks.charge", "args" => [42, "EUR"])
  write_golden("immediate", 'Sidekiq::Client.push("class" => "billing.tasks.charge", ' \
    '"args" => [42, "EUR"])', "queue:default")

  fresh
  Compat::Charge.perform_async(1, "two", {"three" => 3.5})
  write_golden("worker_class", 'Compat::Charge.perform_async(1, "two", {"three" => 3.5})',
    "queue:compat")

  fresh
  Sidekiq::Client.push("class" => "ReportWorker", "queue" => "low", "retry" => 3,
    "tags" => ["reports", "nightly"], "args" => [])
  write_golden("options", 'Sidekiq::Client.push("class" => "ReportWorker", "queue" => "low", ' \
    '"retry" => 3, "tags" => ["reports", "nightly"], "args" => [])', "queue:low")

  fresh
  Compat::Charge.perform_in(3600, 7)
  write_golden("scheduled", "Compat::Charge.perform_in(3600, 7)", "schedule")

  fresh
  Compat::Charge.perform_bulk([[1], [2], [3]])
  write_golden("bulk", "Compat::Charge.perform_bulk([[1], [2], [3]])", "queue:compat")

  fresh
  Sidekiq::Client.push("class" => "NotifyJob", "args" => EDGE_ARGS)
  write_golden("edge_args", 'Sidekiq::Client.push("class" => "NotifyJob", "args" => EDGE_ARGS)',
    "queue:default")

  fresh
  Sidekiq::Client.push("class" => "NotifyJob", "args" => [1.0e20, 1.0e16, 100.0, -0.0])
  write_golden("float_spelling", 'Sidekiq::Client.push("class" => "NotifyJob", ' \
    '"args" => [1.0e20, 1.0e16, 100.0, -0.0])', "queue:default")
end

def launcher
  Sidekiq.options[:queues] = ["default", "low"]
  Sidekiq.options[:concurrency] = 2
  Sidekiq.options[:tag] = "golden"
  Sidekiq.options[:labels] = ["capture"]
  Sidekiq.options[:timeout] = 2
  Sidekiq::Launcher.new(Sidekiq.options)
end

def capture_failures_and_process
  fresh
  running = launcher
  running.run
  identity = wait_for("a heartbeat") { redis { |conn| conn.smembers("processes").first } }
  write_golden("process", "a Sidekiq::Launcher heartbeat (concurrency 2, queues default " \
    "and low, tag golden, label capture)", identity)
  write_golden("processes", "the same heartbeat", "processes")

  FailingJob.perform_async("tok_visa")
  wait_for("the first retry") { redis { |conn| conn.zcard("retry") } == 1 }
  write_golden("retry_first_failure", 'FailingJob.perform_async("tok_visa") run by a ' \
    "Sidekiq::Launcher: its first failure", "retry")

  # Due now, then promoted by Sidekiq's own poller code, as when the retry comes due.
  Sidekiq::RetrySet.new.first.reschedule(Time.now.to_f - 1)
  Sidekiq::Scheduled::Enq.new.enqueue_jobs
  wait_for("the second retry") do
    redis { |conn| conn.zrange("retry", 0, -1).any? { |m| m.include?('"retried_at"') } }
  end
  write_golden("retry_second_failure", "the same job promoted by Sidekiq::Scheduled::Enq " \
    "and failing again", "retry")

  DoomedJob.perform_async("x")
  wait_for("the dead job") { redis { |conn| conn.zcard("dead") } == 1 }
  write_golden("dead", 'DoomedJob.perform_async("x") (retry: 0) run by a Sidekiq::Launcher',
    "dead")

  Hold.perform_async("busy")
  wait_for("the busy job") { redis { |conn| conn.hlen("#{identity}:workers") } == 1 }
  write_golden("workers", 'Hold.perform_async("busy") while it runs', "#{identity}:workers")
  Hold::RELEASE << :go
  wait_for("the busy job to end") { Sidekiq::Processor::WORKER_STATE.size.zero? }

  running.send(:heartbeat) # flushes the processed and failed counts
  write_golden("stat_processed", "the counts after those jobs", "stat:processed")
  write_golden("stat_failed", "the counts after those jobs", "stat:failed")
  day = Time.now.utc.strftime("%Y-%m-%d")
  write_golden("stat_processed_day", "the counts after those jobs", "stat:processed:#{day}")
  running.stop
end

def write_versions
  redis_version = redis { |conn| conn.info["redis_version"] }
  versions = {"sidekiq" => Sidekiq::VERSION, "ruby" => RUBY_VERSION,
              "redis_rb" => Redis::VERSION, "json" => JSON::VERSION,
              "redis_server" => redis_version,
              "command" => "ruby tests/compat/ruby/capture_goldens.rb",
              "captured_on" => Time.now.utc.strftime("%Y-%m-%d")}
  File.write(File.join(OUT, "versions.json"), JSON.pretty_generate(versions) + "\n")
end

begin
  FileUtils.mkdir_p(OUT)
  capture_pushes
  capture_failures_and_process
  write_versions
  puts "wrote goldens to #{OUT}"
ensure
  Process.kill("TERM", redis_pid)
  Process.wait(redis_pid)
  FileUtils.rm_rf(tmp)
end

# frozen_string_literal: true

# Prints, as one JSON object, what Sidekiq's own data API reads from the Redis at
# REDIS_URL: queues, the retry, scheduled and dead sets, processes, busy jobs and stats.
# Run by tests/compat/test_sidekiq_reads_wurk.py against the suite's redis-server.
#
# Times are given as {"epoch": seconds, "year": year}, as Sidekiq turns them into Ruby
# Time objects (so a Sidekiq 8 integer-ms timestamp shows its year as Sidekiq sees it).

require "json"
require "sidekiq"
require "sidekiq/api"

Redis.silence_deprecations = true if Redis.respond_to?(:silence_deprecations=)

def time(value)
  value && {"epoch" => value.to_f, "year" => value.year}
end

def epoch_field(record, field)
  # Sidekiq's web UI shows these with Time.at(job["failed_at"]) (retry.erb, dead.erb).
  record[field] && time(Time.at(record[field]).utc)
end

def job(record)
  {"jid" => record.jid, "klass" => record.klass, "display_class" => record.display_class,
   "args" => record.args, "display_args" => record.display_args, "queue" => record.queue,
   "created_at" => time(record.created_at), "enqueued_at" => time(record.enqueued_at),
   "latency" => record.latency, "tags" => record.tags, "item" => record.item}
end

def failure(record)
  job(record).merge(
    "error_class" => record["error_class"], "error_message" => record["error_message"],
    "retry_count" => record["retry_count"], "failed_at" => epoch_field(record, "failed_at"),
    "retried_at" => epoch_field(record, "retried_at"),
    "error_backtrace" => record.error_backtrace, "error" => record.error?
  )
end

def sorted_set(set)
  set.map { |entry| failure(entry).merge("at" => time(entry.at), "score" => entry.score) }
end

def process(pr)
  {"identity" => pr.identity, "hostname" => pr["hostname"], "pid" => pr["pid"],
   "tag" => pr.tag, "labels" => pr.labels, "queues" => pr.queues,
   "concurrency" => pr["concurrency"], "busy" => pr["busy"], "quiet" => pr["quiet"],
   "stopping" => pr.stopping?, "rss" => pr["rss"], "rtt_us" => pr["rtt_us"],
   "beat" => time(Time.at(pr["beat"]).utc), "started_at" => time(Time.at(pr["started_at"]).utc)}
end

def stats
  stats = Sidekiq::Stats.new
  {"processed" => stats.processed, "failed" => stats.failed,
   "scheduled_size" => stats.scheduled_size, "retry_size" => stats.retry_size,
   "dead_size" => stats.dead_size, "enqueued" => stats.enqueued,
   "processes_size" => stats.processes_size, "workers_size" => stats.workers_size,
   "default_queue_latency" => stats.default_queue_latency, "queues" => stats.queues,
   "history_processed" => Sidekiq::Stats::History.new(1).processed,
   "history_failed" => Sidekiq::Stats::History.new(1).failed}
end

processes = Sidekiq::ProcessSet.new
work = Sidekiq::WorkSet.new
puts JSON.generate(
  "sidekiq" => Sidekiq::VERSION,
  "queues" => Sidekiq::Queue.all.map { |queue|
    {"name" => queue.name, "size" => queue.size, "latency" => queue.latency,
     "paused" => queue.paused?, "jobs" => queue.map { |record| job(record) }}
  },
  "retries" => sorted_set(Sidekiq::RetrySet.new),
  "scheduled" => sorted_set(Sidekiq::ScheduledSet.new),
  "dead" => sorted_set(Sidekiq::DeadSet.new),
  "processes" => processes.map { |pr| process(pr) },
  "process_totals" => {"size" => processes.size, "concurrency" => processes.total_concurrency,
                       "rss" => processes.total_rss_in_kb},
  "work" => work.map { |identity, tid, hash| {"identity" => identity, "tid" => tid, **hash} },
  "work_size" => work.size,
  "stats" => stats
)

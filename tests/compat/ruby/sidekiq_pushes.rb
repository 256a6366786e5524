# frozen_string_literal: true

# Pushes jobs with Sidekiq's own client to the Redis at REDIS_URL and prints their jids
# as JSON. Reads a JSON list of pushes on stdin, each one of:
#
#   {"via": "perform_async", "args": [...]}              Compat::Charge.perform_async
#   {"via": "perform_in", "interval": 1, "args": [...]}  Compat::Charge.perform_in
#   {"via": "perform_bulk", "args": [[...], ...]}        Compat::Charge.perform_bulk
#   {"via": "push", "item": {...}}                       Sidekiq::Client.push
#
# Run by tests/compat/test_wurk_runs_sidekiq_jobs.py against the suite's redis-server.

require "json"
require "sidekiq"

Redis.silence_deprecations = true if Redis.respond_to?(:silence_deprecations=)

# The Ruby twin of tests/compat/jobs.py's Charge: same name, same queue.
module Compat
  class Charge
    include Sidekiq::Worker
    sidekiq_options queue: "compat"
  end
end

def push(spec)
  case spec.fetch("via")
  when "perform_async" then [Compat::Charge.perform_async(*spec.fetch("args"))]
  when "perform_in"
    [Compat::Charge.perform_in(spec.fetch("interval"), *spec.fetch("args"))]
  when "perform_bulk" then Compat::Charge.perform_bulk(spec.fetch("args"))
  when "push" then [Sidekiq::Client.push(spec.fetch("item"))]
  else raise ArgumentError, "unknown push #{spec.inspect}"
  end
end

puts JSON.generate("jids" => JSON.parse($stdin.read).map { |spec| push(spec) })

package postgres

import "github.com/jackc/pgx/v5/pgxpool"

// QueuePool is the queue's own pool, for the tests of its settings.
func QueuePool(q *Queue) *pgxpool.Pool { return q.pool }

package access

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/yukta/yukta/domain/fault"
)

// MaxQueueNameLen is the longest a queue name may be. A queue names where a
// TASK node's work waits for remote workers; WORKER keys may be limited to
// a list of queues.
const MaxQueueNameLen = 64

// queuePattern is what a queue name may be: 1 to MaxQueueNameLen lowercase
// letters, digits, '.', '_' or '-', starting with a letter or digit. It
// keeps names short, in one letter case, and safe in logs, metric labels
// and URLs.
var queuePattern = regexp.MustCompile(fmt.Sprintf(`^[a-z0-9][a-z0-9._-]{0,%d}$`, MaxQueueNameLen-1))

// ErrQueueName is what ValidateQueueName's error matches (with
// fault.ErrInvalid).
var ErrQueueName = fmt.Errorf("access: invalid queue name: %w", fault.ErrInvalid)

// msgQueueRule says what a queue name may be, for errors.
const msgQueueRule = "queue names are 1 to 64 lowercase letters, digits, '.', '_' or '-', starting with a letter or digit (for example build or gpu.large)"

// ValidateQueueName returns nil when name may name a queue, and otherwise
// an error matching ErrQueueName that quotes the name (shortened) and says
// what a queue name may be. The caller names the field.
func ValidateQueueName(name string) error {
	if queuePattern.MatchString(name) {
		return nil
	}
	return fault.Newf(ErrQueueName, "%q is not a queue name; %s", clipText(name), msgQueueRule)
}

const msgQueues = "needs at least one queue name; leave the list out to allow every queue"

// checkQueues validates a queue list and returns it sorted, or the problems
// found. A nil list stays nil (every queue); an empty one is refused.
func checkQueues(queues []string) ([]string, []string) {
	if queues == nil {
		return nil, nil
	}
	if len(queues) == 0 {
		return nil, []string{msgQueues}
	}
	var msgs []string
	seen := make(map[string]bool, len(queues))
	for _, q := range queues {
		switch err := ValidateQueueName(q); {
		case err != nil:
			msgs = append(msgs, err.Error())
		case seen[q]:
			msgs = append(msgs, fmt.Sprintf("queue %q is listed twice; list it once", q))
		}
		seen[q] = true
	}
	if len(msgs) > 0 {
		return nil, msgs
	}
	list := slices.Clone(queues)
	slices.Sort(list)
	return list, nil
}

// msgQueuesNotWorker refuses a queue list on a key of another role.
func msgQueuesNotWorker(role Role) string {
	return fmt.Sprintf("is only for a WORKER key (it limits the queues the key may take tasks from), and this key's role is %s; leave the list out, or make the role WORKER", role)
}

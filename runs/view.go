package runs

// TaskView is a task's state in a run, for the API and pages.
type TaskView struct {
	Status Status
	// Outside says the task is not part of the run (another node's, in a
	// run of some nodes; or succeeded in the run retried).
	Outside bool
	// Attempt counts its dispatches.
	Attempt int32
	// Ready is when its requirements were met; Start and End when it
	// started and ended; unix milliseconds (0 when not yet).
	Ready, Start, End int64
	Message           string
}

// Task returns task t's state.
func (s *State) Task(t int32) TaskView {
	ts := s.tasks[t]
	return TaskView{Status: ts.status, Outside: ts.outside, Attempt: ts.attempt, Ready: ts.ready, Start: ts.start, End: ts.end, Message: s.msgs[t]}
}

// Statuses returns every task's status, by index: what a retry carries.
func (s *State) Statuses() []Status {
	out := make([]Status, len(s.tasks))
	for t, ts := range s.tasks {
		out[t] = ts.status
	}
	return out
}

// NodeFailed says node ni has a task of the run that failed or dep_failed.
func (s *State) NodeFailed(ni int32) bool { return s.nodes[ni].failed }

// Running returns the task node ni runs now.
func (s *State) Running(ni int32) (int32, bool) {
	t := s.nodes[ni].busy
	return t, t >= 0
}

// Busy is how many nodes run a task now.
func (s *State) Busy() int { return s.busy }

// Counts counts the tasks of the run by status (outside tasks apart).
func (s *State) Counts() (byStatus map[Status]int, outside int) {
	byStatus = map[Status]int{}
	for _, ts := range s.tasks {
		if ts.outside {
			outside++
			continue
		}
		byStatus[ts.status]++
	}
	return byStatus, outside
}

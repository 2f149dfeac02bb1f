package dedupe

import "fmt"

// StepItems is how many items one step of a Diff or Commit holds at most.
const StepItems = stepItems

func (r *Redis) setAfterStep(fn stepHook) { r.afterStep = fn }
func (b *Bolt) setAfterStep(fn stepHook)  { b.afterStep = fn }

// SetAfterStep makes s call fn after each step of a Diff or Commit cut into
// several (steps.go), so that a test can stop one between two steps. s is
// a *Redis, a *Bolt or a type embedding one.
func SetAfterStep(s Store, fn func(op string, done int)) {
	h, ok := s.(interface{ setAfterStep(stepHook) })
	if !ok {
		panic(fmt.Sprintf("SetAfterStep: unknown store %T", s))
	}
	h.setAfterStep(fn)
}

package publish

// WaitStatsRefreshed waits for the gauge refreshes that changes scheduled
// (statsChanged), so that a test counting store round trips counts its own.
func (p *Publisher) WaitStatsRefreshed() { p.statsRefreshing.Wait() }

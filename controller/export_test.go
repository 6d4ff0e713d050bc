package controller

// SetOnRender tells f the clusters each render of l's replica renders: its
// reconciles' and the committed sets it makes (the shard tests count them).
func SetOnRender(l *Loop, f func(clusters []string)) { l.onRender = f }

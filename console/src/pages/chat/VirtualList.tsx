import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState, type ReactNode } from 'react'

/*
 * A list that renders only the rows in view (plus an overscan), for chats of thousands of messages.
 * Rows have any height: each rendered row is measured by one shared ResizeObserver and the offsets
 * are prefix sums over measured (or estimated) heights, recomputed when a measurement changes.
 * When the view is at the bottom it stays there as rows grow (a streaming answer) or are added.
 */
export interface VirtualListProps<T> {
  items: readonly T[]
  itemKey: (item: T) => string
  render: (item: T) => ReactNode
  /** Height guessed for a row not measured yet. */
  estimate?: number
  /** Pixels rendered beyond the view on each side. */
  overscan?: number
  label: string
  className?: string
}

export function VirtualList<T>({
  items,
  itemKey,
  render,
  estimate = 80,
  overscan = 600,
  label,
  className,
}: VirtualListProps<T>) {
  const scroller = useRef<HTMLDivElement>(null)
  const heights = useRef(new Map<string, number>())
  const [measured, setMeasured] = useState(0)
  const [view, setView] = useState({ top: 0, height: 800 })
  const atBottom = useRef(true)
  const frame = useRef(0)

  const keys = useMemo(() => items.map(itemKey), [items, itemKey])
  const offsets = useMemo(() => {
    const out = new Float64Array(keys.length + 1)
    for (let i = 0; i < keys.length; i++)
      out[i + 1] = (out[i] as number) + (heights.current.get(keys[i] as string) ?? estimate)
    return out
    // `measured` changes when a height does
  }, [keys, estimate, measured])
  const total = offsets[keys.length] as number

  const first = Math.max(0, lowerBound(offsets, view.top - overscan) - 1)
  const last = Math.min(keys.length, lowerBound(offsets, view.top + view.height + overscan))

  const observer = useMemo(
    () =>
      typeof ResizeObserver === 'undefined'
        ? null
        : new ResizeObserver((entries) => {
            let changed = false
            for (const e of entries) {
              const key = (e.target as HTMLElement).dataset['key']
              if (key === undefined) continue
              const h = Math.ceil(e.borderBoxSize[0]?.blockSize ?? (e.target as HTMLElement).offsetHeight)
              if (heights.current.get(key) !== h) {
                heights.current.set(key, h)
                changed = true
              }
            }
            if (changed) setMeasured((n) => n + 1)
          }),
    [],
  )
  useEffect(() => () => observer?.disconnect(), [observer])

  const onScroll = useCallback(() => {
    const el = scroller.current
    if (el === null) return
    atBottom.current = el.scrollHeight - el.scrollTop - el.clientHeight < 8
    if (frame.current !== 0) return
    frame.current = requestAnimationFrame(() => {
      frame.current = 0
      setView({ top: el.scrollTop, height: el.clientHeight })
    })
  }, [])

  useLayoutEffect(() => {
    const el = scroller.current
    if (el === null) return
    if (atBottom.current && el.scrollHeight > el.clientHeight) el.scrollTop = el.scrollHeight
    setView((v) =>
      v.top === el.scrollTop && v.height === el.clientHeight ? v : { top: el.scrollTop, height: el.clientHeight },
    )
  }, [total])

  useEffect(() => () => cancelAnimationFrame(frame.current), [])

  const rows: ReactNode[] = []
  for (let i = first; i < last; i++) {
    const item = items[i] as T
    const key = keys[i] as string
    rows.push(
      <Row key={key} rowKey={key} top={offsets[i] as number} observer={observer}>
        {render(item)}
      </Row>,
    )
  }
  return (
    <div
      ref={scroller}
      className={`vlist ${className ?? ''}`}
      onScroll={onScroll}
      role="log"
      aria-label={label}
      tabIndex={0}
    >
      <div className="vlist-spacer" style={{ height: total }}>
        {rows}
      </div>
    </div>
  )
}

function Row({
  rowKey,
  top,
  observer,
  children,
}: {
  rowKey: string
  top: number
  observer: ResizeObserver | null
  children: ReactNode
}) {
  const ref = useRef<HTMLDivElement>(null)
  useLayoutEffect(() => {
    const el = ref.current
    if (el === null || observer === null) return
    observer.observe(el)
    return () => observer.unobserve(el)
  }, [observer])
  return (
    <div ref={ref} data-key={rowKey} className="vlist-row" style={{ transform: `translateY(${top}px)` }}>
      {children}
    </div>
  )
}

/** The first index i with offsets[i] >= y (offsets ascending). */
function lowerBound(offsets: Float64Array, y: number): number {
  let lo = 0
  let hi = offsets.length - 1
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if ((offsets[mid] as number) < y) lo = mid + 1
    else hi = mid
  }
  return lo
}

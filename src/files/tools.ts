// tools come next

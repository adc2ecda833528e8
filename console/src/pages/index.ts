/*
 * Every area's pages, registered at start (each register.ts only calls registerPage; the pages'
 * code loads on first visit). One import line per area.
 */
import './resources/register.ts'
import './admin/register.ts'
import './system/register.ts'
